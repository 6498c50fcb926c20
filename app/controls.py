"""The shared controls and the messages every page shows the same way.

Each widget's key is its entry in :data:`app.state.CONTROLS`; values live in session
state and survive page switches (``persist_state="session"``).
"""

from __future__ import annotations

import streamlit as st

import attention_explorer
from app import compute, live, state
from engine.positional import ENCODINGS
from engine.tokenize import MAX_TOKENS, available_tokenizers

_PERSIST = {"persist_state": "session"}


#: The shared controls, in the order the sidebar shows them.
SHARED = ("text", "tokenizer", "pe", "causal", "d_model", "heads", "seed")


def sidebar(shown=SHARED):
    """The controls pages share, in the sidebar: those in ``shown``, in their usual order.

    A page that uses fewer (the pretrained model reads only the text; the decoder and
    the book have inputs of their own) shows only those, and says so; the others keep
    their values for the next page that shows them.
    """
    with st.sidebar:
        if "text" in shown:
            st.text_area(
                "Text",
                key="text",
                height=150,
                max_chars=state.MAX_TEXT_CHARS,
                help=f"Any text; the model reads its first {MAX_TOKENS} tokens.",
                **_PERSIST,
            )
        if "tokenizer" in shown:
            st.selectbox(
                "Tokenizer",
                available_tokenizers(),
                key="tokenizer",
                format_func=state.TOKENIZER_LABELS.get,
                **_PERSIST,
            )
        if "pe" in shown:
            st.selectbox(
                "Positional encoding",
                ENCODINGS,
                key="pe",
                format_func=state.PE_LABELS.get,
                **_PERSIST,
            )
        if "causal" in shown:
            st.toggle(
                "Causal mask",
                key="causal",
                help="Each token sees only itself and earlier ones.",
                **_PERSIST,
            )
        if "d_model" in shown:
            st.select_slider(
                "d_model (features per token)", state.D_MODEL_CHOICES, key="d_model", **_PERSIST
            )
        if "heads" in shown:
            st.select_slider(
                "Heads", state.divisors(st.session_state["d_model"]), key="heads", **_PERSIST
            )
        if "seed" in shown:
            st.number_input(
                "Seed (embeddings and weights)",
                min_value=0,
                max_value=state.SEED_MAX,
                step=1,
                key="seed",
                **_PERSIST,
            )
        if set(shown) != set(SHARED):
            st.caption(
                "This page has inputs of its own; the toy model's settings wait for the "
                "pages that use them."
            )


def scale_label(value, d_model, heads):
    """A stop of the scale slider as it is shown: 1/√d_k and "no scaling" named."""
    default = state.default_scale(d_model, heads)
    if value == default:
        return f"{value:.4g} = 1/√{d_model // heads} (default)"
    if value == 1.0:
        return "1 (no scaling)"
    return f"{value:.4g}"


def scale_slider(frames=None):
    """The logarithmic scale slider, which lives in the browser while it moves.

    It is the chart component's slider (:mod:`attention_explorer`): while it is dragged
    the charts that follow it switch between the engine-computed ``frames`` (bytes from
    :func:`app.compute.scale_frames`, sent only when they change); on release (or a
    keyboard step) the stop comes back here, into ``st.session_state["scale"]`` and so
    the URL. Without frames the charts update from the server on release.
    """
    d_model, heads = st.session_state["d_model"], st.session_state["heads"]
    options = state.scale_options(d_model, heads)

    def released():
        st.session_state["scale"] = options[st.session_state[live.SOURCE]["stop"]]

    if frames is not None:
        attention_explorer.chart(key=f"{live.SOURCE}_frames", data=frames, height=0)
    attention_explorer.chart(
        key=live.SOURCE,
        data={
            "kind": "scale",
            "source": live.SOURCE,
            "label": "Scale s in softmax(s · q·kᵀ), logarithmic",
            "labels": [scale_label(value, d_model, heads) for value in options],
            "stop": options.index(st.session_state["scale"]),
        },
        on_stop_change=released,
    )


def url_warnings(new_warnings):
    """Show what was wrong with the link the session opened, until dismissed."""
    if new_warnings:
        st.session_state["_url_warnings"] = new_warnings
    pending = st.session_state.get("_url_warnings", [])
    if pending:
        st.warning("\n\n".join(pending), icon="⚠️")
        if st.button("Dismiss", key="dismiss_url_warnings"):
            st.session_state["_url_warnings"] = []
            st.rerun()


def toy_run():
    """The toy layer for the current controls, with the token notices every page shows.

    Stops the page with a hint when the text has no tokens.
    """
    values = state.current()
    tokenization, notice = compute.tokenize(values["text"], values["tokenizer"])
    if notice:
        st.info(notice)
    if tokenization.truncated:
        st.warning(
            f"This text has {MAX_TOKENS + tokenization.truncated:,} tokens; the page shows the "
            f"first {MAX_TOKENS} and leaves the other {tokenization.truncated:,} out."
        )
    if not tokenization.tokens:
        st.info("Type some text in the sidebar to see its tokens.")
        st.stop()
    run = compute.toy(**state.model_inputs(values))
    return tokenization, run


def head_picker(key, n_heads):
    """A head selector when there is more than one head; returns the head index."""
    if n_heads == 1:
        return 0
    if st.session_state.get(key, 0) >= n_heads:
        st.session_state[key] = 0
    return st.select_slider("Head", range(n_heads), key=key, **_PERSIST)


def find_token(labels, word, default=0):
    """Index of the first token whose label is ``word`` (case-insensitive), else ``default``."""
    lowered = [label.lower() for label in labels]
    return lowered.index(word) if word in lowered else default


def token_picker(key, labels, prefer=None, label="Query token", default=0):
    """Pick a token by position; starts on the first token matching ``prefer``.

    Without such a token (or without ``prefer``) it starts on position ``default``; a
    stored position past the end of new text starts over. Returns the token's index.
    """
    if st.session_state.get(key) is not None and st.session_state[key] >= len(labels):
        del st.session_state[key]
    if key not in st.session_state:
        st.session_state[key] = find_token(labels, prefer, min(default, len(labels) - 1))
    return st.selectbox(
        label,
        range(len(labels)),
        key=key,
        format_func=lambda i: f"{i}: {labels[i]}",
        **_PERSIST,
    )


def bounded_slider(label, key, low, high, default, **kwargs):
    """An integer slider whose range follows the data; a stale value is clamped into it.

    With ``low == high`` there is nothing to choose (Streamlit refuses such a slider):
    the value is shown as a caption and returned.
    """
    if high <= low:
        st.caption(f"{label}: {low}")
        return low
    value = min(max(st.session_state.get(key, default), low), high)
    if st.session_state.get(key) != value:
        st.session_state[key] = value
    return st.slider(label, low, high, key=key, **_PERSIST, **kwargs)
