"""The app's shared state: every control's key, default and URL form, registered once.

Each shared widget uses exactly its key here, and its value is mirrored in the URL so a
copied link reproduces the view on any page. Values arriving from a URL are parsed and
checked; a bad one falls back to the default and leaves a warning for the page to show.
:class:`Settings` condenses the values into what determines the core pages' attention
layer: one small hashable value, the cache key and the engine's input. Everything here
but :func:`current`, :func:`load_url`, :func:`reconcile` and :func:`write_url` is pure.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from engine.checkpoint import minilm_config
from engine.positional import ENCODINGS
from engine.resources import MINILM_INSTALL_HINT
from engine.tokenize import available_tokenizers

DEFAULT_TEXT = (
    "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
    "food. In the end, they just gave me two slices of bread. Their ambiance was just as "
    "good as the food and service."
)
#: Longer texts still run, but are left out of links (browsers and servers cap URL length).
MAX_URL_TEXT = 2000
#: The free-text controls: the text every page reads, and the one /pretrained compares it
#: with (empty: no comparison).
TEXT_KEYS = ("text", "text_b")
#: Characters read from the text box; beyond this the rest is ignored, with a message.
MAX_TEXT_CHARS = 100_000
#: Sentences the summarize page ranks (one MiniLM pass each); later ones are left out.
MAX_SENTENCES = 50
D_MODEL_CHOICES = (4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768)
MAX_HEADS = 16
SEED_MAX = 2**32 - 1
TOKENIZER_LABELS = {
    "wordpiece": "WordPiece (MiniLM)",
    "bpe": "Byte-level BPE",
    "words": "Words and punctuation",
}
PE_LABELS = {
    "none": "None",
    "sinusoidal": "Sinusoidal",
    "learned": "Learned (seeded)",
    "rotary": "Rotary (RoPE)",
}
CONVENTIONS = ("rows", "columns")
WEIGHTS_LABELS = {"minilm": "MiniLM (trained)", "random": "Random (seeded)"}
#: The trained head whose "it" finds "restaurant" in the default passage (weight 0.430).
DEFAULT_LAYER, DEFAULT_HEAD = 3, 1
#: all-MiniLM-L6-v2's sizes, from its config.json; None when the package is not installed.
MINILM = minilm_config()

#: Scale grid: quarter-octave steps from 2⁻¹⁰ ≈ 0.001 to 2¹⁰ = 1024; 1 ("no scaling")
#: and every 1/√d_k with d_k a power of two lie on it.
SCALE_GRID = tuple(float(2.0 ** (i / 4)) for i in range(-40, 41))
SCALE_MIN, SCALE_MAX = SCALE_GRID[0], SCALE_GRID[-1]


def available_weights(config=MINILM):
    """The weights the core pages can run: MiniLM first when it is installed."""
    return ("random",) if config is None else ("minilm", "random")


def model_shape(values, config=MINILM):
    """(d_model, heads) of the layer the values select: MiniLM's own, or the sliders'."""
    if values["weights"] == "minilm" and config is not None:
        return config.d_model, config.n_heads
    return values["d_model"], values["heads"]


def default_tokenizer():
    """WordPiece when MiniLM is installed, else the shipped BPE."""
    return available_tokenizers()[0]


def divisors(d_model):
    """Head counts the slider offers: divisors of d_model up to :data:`MAX_HEADS`."""
    return tuple(h for h in range(1, min(d_model, MAX_HEADS) + 1) if d_model % h == 0)


def default_scale(d_model, heads):
    """1/√d_k with d_k = d_model / heads, the scale of Vaswani et al.

    When it lies on :data:`SCALE_GRID` (d_k a power of two) the grid's own float is
    returned: 2^(-10/4) and 1/√32 differ in the last bit, and the slider must not
    offer both.
    """
    scale = 1.0 / math.sqrt(d_model // heads)
    return next((stop for stop in SCALE_GRID if math.isclose(stop, scale)), scale)


def scale_options(d_model, heads):
    """The scale slider's stops: :data:`SCALE_GRID` plus this d_k's default."""
    return tuple(sorted({*SCALE_GRID, default_scale(d_model, heads)}))


def scale_label(value, d_model, heads):
    """A stop of the scale slider as it is shown: 1/√d_k and "no scaling" named."""
    default = default_scale(d_model, heads)
    if value == default:
        return f"{value:.4g} = 1/√{d_model // heads} (default)"
    if value == 1.0:
        return "1 (no scaling)"
    return f"{value:.4g}"


def nearest(options, value):
    """The option closest to ``value`` on a log scale."""
    return min(options, key=lambda option: abs(math.log(option) - math.log(value)))


# --- parsing URL values: each returns the value or raises ValueError -------------------


def _parse_int(text, low, high):
    value = float(text)  # accepts "16", "16.0", "1e3"; rejects "abc"
    if not math.isfinite(value) or value != int(value) or not low <= value <= high:
        raise ValueError
    return int(value)


def _parse_bool(text):
    lowered = text.strip().lower()
    if lowered in ("1", "true", "on", "yes"):
        return True
    if lowered in ("0", "false", "off", "no"):
        return False
    raise ValueError


def _parse_choice(choices):
    def parse(text):
        if text not in choices:
            raise ValueError
        return text

    return parse


def _parse_scale(text):
    value = float(text)
    if not math.isfinite(value) or not SCALE_MIN <= value <= SCALE_MAX:
        raise ValueError
    return value


def _parse_text(text):
    if len(text) > MAX_URL_TEXT:
        raise ValueError
    return text


@dataclass(frozen=True)
class Control:
    """One piece of shared state: its widget key, default, and URL parser.

    ``default`` is a value or a function of the other values (the scale's default
    depends on d_model and heads).
    """

    key: str
    default: Any
    parse: Callable[[str], Any]
    describe: str

    def default_for(self, values):
        """The default, given the other controls' current values."""
        return self.default(values) if callable(self.default) else self.default


def make_controls(config=MINILM):
    """The registry of shared controls, for the installed model (``config``) or none."""
    tokenizers = available_tokenizers()
    weights = available_weights(config)
    n_layers = 1 if config is None else config.n_layers
    return {
        control.key: control
        for control in (
            Control(
                "text", DEFAULT_TEXT, _parse_text, f"text of at most {MAX_URL_TEXT} characters"
            ),
            Control(
                "text_b",
                "",
                _parse_text,
                f"text of at most {MAX_URL_TEXT} characters (the sentence compared with)",
            ),
            Control(
                "tokenizer",
                tokenizers[0],
                _parse_choice(tokenizers),
                "one of " + ", ".join(tokenizers),
            ),
            Control(
                "weights",
                weights[0],
                _parse_choice(weights),
                "one of "
                + ", ".join(weights)
                + ("" if config else f" (MiniLM is not installed: {MINILM_INSTALL_HINT})"),
            ),
            Control(
                "layer",
                min(DEFAULT_LAYER, n_layers - 1),
                lambda t: _parse_int(t, 0, n_layers - 1),
                f"a layer from 0 to {n_layers - 1}",
            ),
            Control(
                "head",
                lambda v: DEFAULT_HEAD if v["weights"] == "minilm" else 0,
                lambda t: _parse_int(t, 0, MAX_HEADS - 1),
                "a head index below the number of heads",
            ),
            Control("seed", 0, lambda t: _parse_int(t, 0, SEED_MAX), f"an integer 0–{SEED_MAX}"),
            Control(
                "d_model",
                16,
                lambda t: _parse_int(t, 1, max(D_MODEL_CHOICES)),
                "one of " + ", ".join(map(str, D_MODEL_CHOICES)),
            ),
            Control("heads", 1, lambda t: _parse_int(t, 1, MAX_HEADS), "a divisor of d_model"),
            Control(
                "scale",
                lambda v: default_scale(*model_shape(v, config)),
                _parse_scale,
                f"a number from {SCALE_MIN:g} to {SCALE_MAX:g}",
            ),
            Control("causal", False, _parse_bool, "0 or 1"),
            Control("pe", "none", _parse_choice(ENCODINGS), "one of " + ", ".join(ENCODINGS)),
            Control(
                "convention", "rows", _parse_choice(CONVENTIONS), "one of " + ", ".join(CONVENTIONS)
            ),
            Control(
                "k",
                2,
                lambda t: _parse_int(t, 1, MAX_SENTENCES),
                f"an integer 1–{MAX_SENTENCES} (sentences in the summary)",
            ),
        )
    }


CONTROLS = make_controls()


def format_value(key, value):
    """A value as it is written in the URL."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def parse_query(query, controls=CONTROLS):
    """Turn URL parameters into control values, with a warning for each bad one.

    Pure: takes the query as a mapping of key to str or list of str, returns the
    values it accepted and the warnings. Repeated keys take the last value; unknown
    keys are named in a warning; values that fail their parser, or that break a rule
    between controls (heads must divide d_model), fall back to the default.

    Returns
    -------
    values : dict of key -> value, for the keys given and accepted
    warnings : list of str
    """
    values, warnings = {}, []
    for key, raw in query.items():
        text = raw[-1] if isinstance(raw, list | tuple) else raw
        control = controls.get(key)
        if control is None:
            if key not in EXTRA_PARAMS:
                warnings.append(f"Ignored the unknown link parameter “{_clip(key)}”.")
            continue
        try:
            values[key] = control.parse(str(text))
        except (ValueError, OverflowError):
            warnings.append(
                f"Ignored {key}=“{_clip(str(text))}” from the link: {key} must be "
                f"{control.describe}. Using the default instead."
            )
    if "d_model" in values and values["d_model"] not in D_MODEL_CHOICES:
        warnings.append(
            f"Ignored d_model={values.pop('d_model')} from the link: it must be "
            f"{controls['d_model'].describe}. Using the default instead."
        )
    d_model = values.get("d_model", controls["d_model"].default)
    if "heads" in values and values["heads"] not in divisors(d_model):
        warnings.append(
            f"Ignored heads={values.pop('heads')} from the link: it must divide "
            f"d_model={d_model}. Using the default instead."
        )
    n_heads = _n_heads(values, controls)
    if "head" in values and values["head"] >= n_heads:
        warnings.append(
            f"Ignored head={values.pop('head')} from the link: this model has {n_heads} "
            "heads, numbered from 0. Using the default instead."
        )
    return values, warnings


def _n_heads(values, controls):
    """Heads of the layer that ``values`` select, defaults filling the gaps (parse time)."""
    weights = values.get("weights", controls["weights"].default)
    if weights == "minilm" and MINILM is not None:
        return MINILM.n_heads
    return values.get("heads", controls["heads"].default)


#: Parameters that belong to other features, left alone here: presentation mode, the
#: tour's step, and the tokens a page's pickers chose (``controls.token_picker``; ``_b``
#: for the sentence /pretrained compares with).
EXTRA_PARAMS = frozenset({"present", "step", "query", "key", "query_b", "key_b"})


def _clip(text, limit=40):
    return md_escape(text if len(text) <= limit else text[:limit] + "…")


def md_escape(text):
    """Backslash-escape every ASCII punctuation mark, so text shows as typed in Markdown.

    Streamlit's messages (``st.warning`` and friends) render Markdown, LaTeX (``$``) and
    colour directives (``:red[…]``); escaped, user text is shown, never interpreted.
    """
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in str(text))


_MD_SPECIAL = frozenset("\\`*_{}[]()#+-.!|<>~$:&=\"'^%@;,/?")


def reconcile_values(values, previous_dk=None, previous_weights=None):
    """Make the values consistent with each other; pure.

    heads snaps to a divisor of d_model; the head resets to the new model's default
    when the weights change, and otherwise stays below the number of heads; the scale
    follows the default 1/√d_k when d_k changes and the scale was that default; any other
    scale snaps to the slider's nearest stop.

    Returns
    -------
    values : dict, a new dict
    d_k : int, the d_k the values now imply
    """
    values = dict(values)
    allowed = divisors(values["d_model"])
    if values["heads"] not in allowed:
        values["heads"] = max(h for h in allowed if h <= values["heads"])
    d_model, heads = model_shape(values)
    if previous_weights is not None and previous_weights != values["weights"]:
        values["head"] = CONTROLS["head"].default_for(values)
    values["head"] = min(values["head"], heads - 1)
    d_k = d_model // heads
    if (
        previous_dk is not None
        and previous_dk != d_k
        and math.isclose(values["scale"], 1.0 / math.sqrt(previous_dk))
    ):
        values["scale"] = 1.0 / math.sqrt(d_k)
    values["scale"] = nearest(scale_options(d_model, heads), values["scale"])
    return values, d_k


def url_params(values, controls=CONTROLS):
    """The URL parameters for ``values``: only those that differ from their defaults."""
    params = {}
    for key, control in controls.items():
        value = values[key]
        default = control.default_for(values)
        same = (
            math.isclose(value, default)
            if isinstance(value, float) and isinstance(default, float)
            else value == default
        )
        if same or (key in TEXT_KEYS and len(value) > MAX_URL_TEXT):
            continue
        params[key] = format_value(key, value)
    return params


# --- the Streamlit side ----------------------------------------------------------------


def current():
    """The shared values as they stand in this session."""
    return {key: st.session_state[key] for key in CONTROLS}


def load_url(start=None):
    """Once per session: fill session state from the URL, then ``start``, then the defaults.

    ``start`` holds values the server was started with (``attention-explorer "some text"``).
    Returns the warnings to show (only on the session's first run).
    """
    if st.session_state.get("_state_loaded"):
        return []
    values, warnings = parse_query({key: st.query_params.get_all(key) for key in st.query_params})
    resolved = {}
    for key, control in CONTROLS.items():  # the link wins, then what the session has
        if key in values:
            resolved[key] = values[key]
        elif key in st.session_state:
            resolved[key] = st.session_state[key]
        elif not callable(control.default):
            resolved[key] = (start or {}).get(key, control.default)
    for key, control in CONTROLS.items():  # defaults that depend on the others
        resolved.setdefault(key, control.default_for(resolved))
    for key, value in resolved.items():
        st.session_state[key] = value
    st.session_state["_state_loaded"] = True
    return warnings


#: Pages on which a shared control's default shows nothing, and the value they open on
#: instead (with "none", /positional-encoding would draw empty tables).
OPENING_VALUES = {"positional-encoding": {"pe": "sinusoidal"}}


def open_page(url_path):
    """Before the sidebar: on a page's first visit in a session, its opening values.

    Only a value still at its default is changed, and not one a link set; the sidebar
    then shows what the page uses, and every later visit keeps the user's choice.
    """
    for key, value in OPENING_VALUES.get(url_path, {}).items():
        opened = f"_opened_{url_path}_{key}"
        if st.session_state.get(opened):
            continue
        st.session_state[opened] = True
        if key not in st.query_params and st.session_state[key] == CONTROLS[key].default:
            st.session_state[key] = value


def reconcile():
    """Before any widget is drawn: keep heads and scale consistent with d_model."""
    values, d_k = reconcile_values(
        current(), st.session_state.get("_scale_dk"), st.session_state.get("_weights")
    )
    for key, value in values.items():
        if st.session_state[key] != value:
            st.session_state[key] = value
    st.session_state["_scale_dk"] = d_k
    st.session_state["_weights"] = values["weights"]


def write_url(keep_step=False, page=None):
    """Mirror the shared values into the URL, keeping presentation mode (and the tour's step).

    On a ``page`` with opening values, a control that differs from its opening value is
    written even at its default, so the link reopens what was shown.
    """
    values = current()
    wanted = url_params(values)
    for key, opening in OPENING_VALUES.get(page, {}).items():
        if values[key] != opening:
            wanted[key] = format_value(key, values[key])
    keep = EXTRA_PARAMS if keep_step else EXTRA_PARAMS - {"step"}
    for key in list(st.query_params):
        stale = key not in wanted if key in CONTROLS else key not in keep
        if stale:
            del st.query_params[key]
    for key, value in wanted.items():
        if st.query_params.get(key) != value:
            st.query_params[key] = value


@dataclass(frozen=True)
class Settings:
    """What determines the core pages' attention layer: the cache key and the engine's input.

    Built by :meth:`from_values`, which keeps only the fields the chosen weights use:
    MiniLM ignores the random model's tokenizer, sizes, seed and positions, so those stay
    at their class defaults and changing them hidden does not split the cache. The head
    is not here: every run holds all the heads, and picking one recomputes nothing.
    """

    text: str
    weights: str = "random"
    layer: int = 0
    tokenizer: str = "words"
    seed: int = 0
    d_model: int = 16
    heads: int = 1
    pe: str = "none"
    causal: bool = False
    scale: float | None = None  # None: the model's own 1/√d_head

    @classmethod
    def from_values(cls, values):
        """The settings for the shared values (a mapping as :func:`current` returns)."""
        common = {"text": values["text"], "causal": values["causal"], "scale": values["scale"]}
        if values["weights"] == "minilm":
            return cls(weights="minilm", layer=values["layer"], **common)
        random = ("tokenizer", "seed", "d_model", "heads", "pe")
        return cls(weights="random", **{key: values[key] for key in random}, **common)

    @property
    def trained(self):
        """Whether these are MiniLM's weights."""
        return self.weights == "minilm"

    @property
    def shape(self):
        """(d_model, heads) of the layer these settings run."""
        return model_shape({"weights": self.weights, "d_model": self.d_model, "heads": self.heads})

    def replace(self, **changes):
        """A copy with ``changes``; ``scale=None`` stands for the model's own scale."""
        return dataclasses.replace(self, **changes)
