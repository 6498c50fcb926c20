"""The shared controls: each one's key, default, range and label, registered once.

Each shared widget uses exactly its key here; :mod:`app.state.links` mirrors the values
in the URL, and :mod:`app.state.session` keeps them in the session. :class:`Settings`
condenses the values into what determines the core pages' attention layer: one small
hashable value, the cache key and the engine's input. Pure: no Streamlit here.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.state.weights import (  # DEFAULT_LAYER, DEFAULT_HEAD: MiniLM's, as pages name them
    DEFAULT_HEAD,  # noqa: F401
    DEFAULT_LAYER,  # noqa: F401
    INSTALL_HINTS,
    INSTALLED,
    MINILM,  # noqa: F401  (None when MiniLM is not installed: read by pages and tests)
    TRAINED_LABELS,
    WEIGHTS_LABELS,
    available_weights,
    default_head,
    max_layers,
    model_config,
    model_shape,
    n_layers,
    short_name,
    trained_config,
)
from engine.positional import ENCODINGS
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

#: Scale grid: quarter-octave steps from 2⁻¹⁰ ≈ 0.001 to 2¹⁰ = 1024; 1 ("no scaling")
#: and every 1/√d_k with d_k a power of two lie on it.
SCALE_GRID = tuple(float(2.0 ** (i / 4)) for i in range(-40, 41))
SCALE_MIN, SCALE_MAX = SCALE_GRID[0], SCALE_GRID[-1]


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


#: The shared controls, in the order the sidebar shows them.
SHARED = (
    "text",
    "weights",
    "layer",
    "head",
    "tokenizer",
    "pe",
    "causal",
    "d_model",
    "heads",
    "seed",
)
#: What only the random model reads; hidden while the weights are MiniLM's.
RANDOM_ONLY = ("tokenizer", "pe", "d_model", "heads", "seed")


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


def make_controls(config=INSTALLED):
    """The registry of shared controls, for the installed model (``config``) or none."""
    tokenizers = available_tokenizers()
    weights = available_weights(config)
    missing = "; ".join(
        f"{WEIGHTS_LABELS[name]} is not installed: {INSTALL_HINTS[name]}"
        for name in TRAINED_LABELS
        if name not in weights
    )
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
                "one of " + ", ".join(weights) + (f" ({missing})" if missing else ""),
            ),
            Control(
                "layer",
                lambda v: default_head(v["weights"])[0],
                lambda t: _parse_int(t, 0, max_layers(config) - 1),
                "a layer index below the model's number of layers",
            ),
            Control(
                "head",
                lambda v: default_head(v["weights"])[1],
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


def md_escape(text):
    """Backslash-escape every ASCII punctuation mark, so text shows as typed in Markdown.

    Streamlit's messages (``st.warning`` and friends) render Markdown, LaTeX (``$``) and
    colour directives (``:red[…]``); escaped, user text is shown, never interpreted.
    """
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in str(text))


_MD_SPECIAL = frozenset("\\`*_{}[]()#+-.!|<>~$:&=\"'^%@;,/?")


def reconcile_values(values, previous_dk=None, previous_weights=None):
    """Make the values consistent with each other; pure.

    heads snaps to a divisor of d_model; the layer and the head reset to the new model's
    default when the weights change, and otherwise stay below the model's layers and
    heads; the scale
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
        values["layer"], values["head"] = default_head(values["weights"])
    values["layer"] = min(values["layer"], n_layers(values) - 1)
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


@dataclass(frozen=True)
class Settings:
    """What determines the core pages' attention layer: the cache key and the engine's input.

    Built by :meth:`from_values`, which keeps only the fields the chosen weights use: a
    trained model ignores the random model's tokenizer, sizes, seed and positions, so
    those stay at their class defaults and changing them hidden does not split the cache.
    A causal model (SmolLM2) always masks the future: its mask is its own, not a what-if.
    The head is not here: every run holds all the heads, and picking one recomputes
    nothing.
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
        trained = model_config(values)
        if trained is not None:
            common["causal"] = common["causal"] or trained.causal
            return cls(weights=values["weights"], layer=values["layer"], **common)
        random = ("tokenizer", "seed", "d_model", "heads", "pe")
        return cls(weights="random", **{key: values[key] for key in random}, **common)

    @property
    def trained(self):
        """Whether these are a trained model's weights (MiniLM's or SmolLM2's)."""
        return self.weights != "random"

    @property
    def config(self):
        """The trained model's sizes (engine.checkpoint.ModelConfig), or None for random."""
        return trained_config(self.weights) if self.trained else None

    @property
    def label(self):
        """The model's short name in sentences: "MiniLM", "SmolLM2" or "Random"."""
        return short_name(self.weights)

    @property
    def shape(self):
        """(d_model, heads) of the layer these settings run."""
        return model_shape({"weights": self.weights, "d_model": self.d_model, "heads": self.heads})

    def replace(self, **changes):
        """A copy with ``changes``; ``scale=None`` stands for the model's own scale."""
        return dataclasses.replace(self, **changes)
