"""The shared controls in the sidebar, and the export format at its foot.

Each widget's key is its entry in :data:`app.state.controls.CONTROLS`; values live in
session state and survive page switches (``persist_state="session"``). The layer, the head
and the mask are the browser's own controls (:mod:`app.widgets.channel`): they report to
those keys, and on /attention a move shows on the charts before any run.
"""

from __future__ import annotations

import streamlit as st

from app.data import trained as trained_models
from app.state import controls, session
from app.widgets import channel, model_box
from engine.positional import ENCODINGS
from engine.tokenize import MAX_TOKENS, available_tokenizers

PERSIST = {"persist_state": "session"}
#: The causal-mask switch's label: not "Causal mask", which is a page's title.
CAUSAL_TOGGLE = "Mask future tokens"
EXPORT_FORMATS = ("png", "svg")


def text_area(label, key, height, **options):
    """A box for a text the model reads: at most the controls' length, kept for the session."""
    return st.text_area(
        label, key=key, height=height, max_chars=controls.MAX_TEXT_CHARS, **PERSIST, **options
    )


def text_help(shown, trained):
    """What the text box says of length: the real limit of the model the page runs.

    The core pages' random model reads the first :data:`engine.tokenize.MAX_TOKENS` tokens
    and leaves the rest out; MiniLM, and a page's own model (/pretrained), read at most
    their positions (from the model's config), at most the pages' 4,096, and refuse a
    longer text.
    """
    cut = f"reads the first {MAX_TOKENS} tokens and leaves the rest out"
    if "weights" not in shown:  # a page with a model of its own
        limit = model_box.session_limit()
        return f"Any text. {limit}" if limit else "Any text."
    weights = st.session_state["weights"]
    loaded = trained_models.model(weights) if trained else None
    if loaded is None or isinstance(loaded, Exception):
        return f"Any text; the random model {cut}."
    source = None if weights == "minilm" else weights
    limit = model_box.reading_limit(loaded, source)
    return f"Any text. {limit} “Random (seeded)” {cut}."


def _text(help_text):
    text_area("Text", "text", 150, help=help_text)


def _tokenizer():
    st.selectbox(
        "Tokenizer",
        available_tokenizers(),
        key="tokenizer",
        format_func=controls.TOKENIZER_LABELS.get,
        **PERSIST,
    )


def _positions():
    st.selectbox(
        "Add positions",  # not "Positional encoding", which is a page's title
        ENCODINGS,
        key="pe",
        format_func=controls.PE_LABELS.get,
        **PERSIST,
    )


def _causal():
    help_text = "The causal mask, on every page: each token sees only itself and earlier ones."
    channel.control("causal_control", "causal", CAUSAL_TOGGLE, (False, True), help=help_text)


def _d_model():
    st.select_slider(
        "d_model (features per token)", controls.D_MODEL_CHOICES, key="d_model", **PERSIST
    )


def _heads():
    st.select_slider(
        "Heads", controls.divisors(st.session_state["d_model"]), key="heads", **PERSIST
    )


def _seed():
    st.number_input(
        "Seed (embeddings and weights)",
        min_value=0,
        max_value=controls.SEED_MAX,
        step=1,
        key="seed",
        **PERSIST,
    )


#: The random model's controls, drawn in this order after the text and the weights.
_RANDOM_MODEL = {
    "tokenizer": _tokenizer,
    "pe": _positions,
    "causal": _causal,
    "d_model": _d_model,
    "heads": _heads,
    "seed": _seed,
}


def draw(shown=controls.SHARED, presenter_bar=None):
    """The controls pages share, in the sidebar: those in ``shown``, in their usual order.

    A page that uses fewer (the pretrained model reads only the text; the decoder and
    the book have inputs of their own) shows only those, and says so; the others keep
    their values for the next page that shows them. With MiniLM's weights the random
    model's settings are hidden the same way. In presentation mode, which hides the
    sidebar, the layer and the head are in ``presenter_bar`` instead: the same keys, so
    the same state and the same link.
    """
    values = session.current()
    trained = "weights" in shown and values["weights"] != "random"
    config = controls.model_config(values) if trained else None
    if trained:
        own = ("causal",) if config is not None and config.causal else ()  # its own mask
        shown = tuple(key for key in shown if key not in (*controls.RANDOM_ONLY, *own))
    with st.sidebar:
        if "text" in shown:
            _text(text_help(shown, trained))
        if "weights" in shown:
            weights_control(trained, presenter_bar)
        for key, widget in _RANDOM_MODEL.items():
            if key in shown:
                widget()
        if config is not None:
            st.caption(model_note(values["weights"], config))
        elif set(shown) != set(controls.SHARED):
            st.caption(
                "This page has inputs of its own; the toy model's settings wait for the "
                "pages that use them."
            )


def model_note(weights, config):
    """What a trained model brings of its own, from its config: the sidebar's caption."""
    if weights == "minilm":
        return (
            f"MiniLM brings its own WordPiece tokenizer, sizes (d_model {config.d_model}, "
            f"{config.n_heads} heads of {config.d_head}) and learned positions; choose "
            "“Random (seeded)” to set them yourself."
        )
    return (
        f"SmolLM2 brings its own byte-level BPE tokenizer, sizes (d_model {config.d_model}, "
        f"{config.n_heads} query heads of {config.d_head} sharing {config.kv_heads} key/value "
        f"heads), rotary positions and its causal mask: a decoder, every token sees only "
        "itself and the tokens before it. Choose “Random (seeded)” to set them yourself."
    )


def weights_control(trained, presenter_bar=None):
    """Weights: a trained model's layer ℓ and head h, or the seeded random model; and the head.

    With a ``presenter_bar`` (presentation mode) the layer and the head are compact
    selectors there, not sliders in the sidebar.
    """
    st.selectbox(
        "Weights",
        controls.available_weights(),
        key="weights",
        format_func=controls.WEIGHTS_LABELS.get,
        help="MiniLM (a 2019 encoder) and SmolLM2 (a 2024 decoder): a trained model's real "
        "layer and head. Random: the seeded toy model, the same mechanism before any "
        "training.",
        **PERSIST,
    )
    available = controls.available_weights()
    for name, label in controls.TRAINED_LABELS.items():
        if name not in available:
            model = label.split(" (")[0]
            st.caption(f"For {model}'s weights, install it: `{controls.INSTALL_HINTS[name]}`")
    values = session.current()
    _, n_heads = controls.model_shape(values)
    n_layers = controls.n_layers(values)
    if presenter_bar is not None:
        _presenter_selectors(presenter_bar, n_layers if trained else 1, n_heads)
        return
    if trained:
        channel.control("layer_control", "layer", LAYER_LABEL, range(n_layers))
    if n_heads > 1:
        channel.control("head_control", "head", HEAD_LABEL, range(n_heads))


#: The layer's and the head's labels, in the sidebar and on /attention's live head control.
LAYER_LABEL, HEAD_LABEL = "Layer ℓ", "Head h"
#: The presenter bar's selectors, by the shared key each picks.
PRESENTER_KEYS = {"layer": "present_layer", "head": "present_head"}


def _presenter_selectors(bar, n_layers, n_heads):
    """The layer and the head as compact selectors in the presenter bar (when more than one).

    A pick there is one of Python's writes on purpose (:mod:`app.widgets.channel`): it sets
    the shared key, and the browser's controls take it from the next run's data.
    """
    for name, count in {"Layer": n_layers, "Head": n_heads}.items():
        shared = name.lower()
        if count > 1:
            key = PRESENTER_KEYS[shared]
            st.session_state[key] = st.session_state[shared]  # the value it shows: the shared one
            bar.selectbox(
                name,
                range(count),
                key=key,
                format_func=lambda value, name=name: f"{name} {value}",
                label_visibility="collapsed",
                width=170,
                on_change=_picked,
                args=(key, shared),
            )


def _picked(key, shared):
    st.session_state[shared] = st.session_state[key]


def export_format():
    """The format each chart's camera button saves, at the foot of the sidebar."""
    st.sidebar.selectbox(
        "Chart downloads as",
        EXPORT_FORMATS,
        key="export_format",
        format_func=str.upper,
        help="What each chart's camera button saves, at print resolution.",
        **PERSIST,
    )
