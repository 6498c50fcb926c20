"""Pickers a page draws: a token by position, a head, an integer slider that follows its data.

A token picker's choice survives a new text (the same word at its nearest position) and
can be a link parameter, written ``position:word``.
"""

from __future__ import annotations

import contextlib

import streamlit as st

from app.state import controls, session
from app.widgets.sidebar import PERSIST
from app.words import summary


def shared_head(run):
    """The head the sidebar picked, kept below the run's number of heads."""
    return min(st.session_state["head"], run.attention.q.shape[0] - 1)  # weights: maybe None


def head_picker(key, n_heads):
    """A head selector when there is more than one head; returns the head index."""
    if n_heads == 1:
        return 0
    if st.session_state.get(key, 0) >= n_heads:
        st.session_state[key] = 0
    return st.select_slider("Head", range(n_heads), key=key, **PERSIST)


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
    return found, f"“{controls.md_escape(word)}” is now token {found}."


def _kept_token(key, labels, start):
    """The picker's position after a new text: the word it showed, found again; and a note."""
    previous = st.session_state[f"_{key}_labels"]
    old = st.session_state[key]
    word = previous[old] if old is not None and 0 <= old < len(previous) else None
    index, note = _restore_token(labels, old, word) if word is not None else (None, None)
    if index is None:
        index = start
        if word is not None:
            note = (
                f"“{controls.md_escape(word)}” is not in the new text; showing token "
                f"{start}, “{controls.md_escape(labels[start])}”."
            )
    return index, note


def token_picker(
    key, labels, prefer=None, label="Query token", default=0, url=None, positions=None
):
    """Pick a token by position; starts on the first token matching ``prefer``.

    Without such a token (or without ``prefer``) it starts on position ``default``. When
    the text changes, the picker keeps the word it showed: the same word at its nearest
    position in the new tokens; when the word is gone it goes back to the start and says
    so, so the picker never names one token while the figures use another. With ``url``,
    the choice is the link parameter of that name, ``position:word``, unless it is the
    starting token. ``positions`` (a range) are the tokens offered, all by default: a
    causal model's key picker offers those its query sees, and a token outside them
    moves to the nearest inside. Returns the token's index.
    """
    offered = range(len(labels)) if positions is None else positions
    start = _inside(find_token(labels, prefer, min(default, len(labels) - 1)), offered)
    seen = f"_{key}_labels"  # the labels the stored position referred to
    previous = st.session_state.get(seen)
    note = None
    if key in st.session_state and previous is not None and list(previous) != list(labels):
        st.session_state[key], note = _kept_token(key, labels, start)  # set even when unchanged
    elif key not in st.session_state:
        st.session_state[key] = _from_link(url, labels, start)
    elif not 0 <= st.session_state[key] < len(labels):
        st.session_state[key] = start
    st.session_state[key] = _inside(st.session_state[key], offered)
    st.session_state[seen] = list(labels)
    in_bar = url == "query" and session.presenting()
    index = _token_box(key, labels, label, offered, in_bar=in_bar)
    if note:
        st.caption(note)
    if url is not None:
        if index == start:
            st.query_params.pop(url, None)
        else:
            st.query_params[url] = f"{index}:{labels[index]}"
    return index


def query_and_key(keys, labels, starts, urls, names=("Query token", "Key token"), visible=None):
    """A query token and a key token, picked side by side (:func:`token_picker`).

    ``keys``, ``starts``, ``urls`` and ``names`` are each picker's key, starting token, link
    parameter and label. ``visible(query)``, a slice of the tokens, is what a causal
    model's query may attend to (:func:`engine.layer_config.visible_keys`): the key picker offers
    those alone. Returns the two tokens' indices.
    """
    left, right = st.columns(2)
    with left:
        query = token_picker(keys[0], labels, label=names[0], default=starts[0], url=urls[0])
    seen = None if visible is None else range(*visible(query).indices(len(labels)))
    with right:
        key = token_picker(
            keys[1], labels, label=names[1], default=starts[1], url=urls[1], positions=seen
        )
    return query, key


def _inside(index, positions):
    """``index`` moved to the nearest of ``positions`` (a range) when it is not one of them."""
    return min(max(index, positions[0]), positions[-1])


def _token_box(key, labels, label, positions, in_bar):
    """The token selector; in presentation mode the page's query token is in the presenter bar.

    It is pinned there by the mode's style, wherever the page draws it, and named in the
    box for want of room.
    """
    with st.container(key="presenter_query") if in_bar else contextlib.nullcontext():
        return st.selectbox(
            label,
            positions,
            key=key,
            format_func=lambda i: f"{label}: {labels[i]} ({i})" if in_bar else f"{i}: {labels[i]}",
            label_visibility="collapsed" if in_bar else "visible",
            **PERSIST,
        )


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
            f"Ignored {url}=“{controls.md_escape(str(raw)[:40])}” from the link: it must be "
            f"position:word with a word of this text. Showing token {start}, "
            f"“{controls.md_escape(labels[start])}”.",
            icon="⚠️",
        )
        return start
    return found


def linked_slider(container, label, n, start, key, url):
    """A select slider over ``range(n)``, held by the link (parameter ``url``); starts on ``start``.

    On its first run in a session the slider takes the link's value, a whole number below
    ``n`` (else it warns and takes ``start``); then it keeps its value until ``start``
    changes (the head finder picks another head: the view follows it), and the link holds
    it whenever it is not ``start``, which the link's other parameters open on anyway.
    Returns the index.
    """
    started = f"_{key}_start"  # the start the slider last followed
    if key not in st.session_state:
        st.session_state[key] = _index_from_link(url, label, n, start)
    elif st.session_state.get(started) != start or not 0 <= st.session_state[key] < n:
        st.session_state[key] = start
    st.session_state[started] = start
    index = container.select_slider(label, range(n), key=key)
    if index == start:
        st.query_params.pop(url, None)
    else:
        st.query_params[url] = str(index)
    return index


def _index_from_link(url, label, n, start):
    """The index the link gives in parameter ``url``, else ``start``, warning if it is bad."""
    raw = st.query_params.get(url)
    if raw is None:
        return start
    if raw.isdigit() and int(raw) < n:
        return int(raw)
    st.warning(
        f"Ignored {url}=“{controls.md_escape(raw[:40])}” from the link: it must be a whole "
        f"number from 0 to {n - 1}. Showing {label.lower()} {start}.",
        icon="⚠️",
    )
    return start


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
    return st.slider(label, low, high, key=key, **PERSIST, **kwargs)


#: Session key of the summary's k as the user set it (on the slider or in a link), which a
#: document with fewer sentences clips and a longer one gives back.
K_ASKED = "summarize_k_asked"


def _asked_k():
    """The k the user asked for: the slider's last setting, else the link's (``k``)."""
    return st.session_state.setdefault(K_ASKED, st.session_state["k"])


def _ask_k():
    """The k slider's callback: the k set there is the one asked for."""
    st.session_state[K_ASKED] = st.session_state["k"]


def summary_k(n):
    """The summary's k, at most the ``n`` sentences the document has, and a note if clipped.

    A shorter document clips the k asked for; a longer one gives it back.
    """
    st.session_state["k"] = _asked_k()  # clipped below only if this document is shorter
    k = bounded_slider("Sentences in the summary (k)", "k", 1, n, 2, on_change=_ask_k)
    if n > 1 and k < _asked_k():
        st.caption(summary.clipped_k_note(_asked_k(), n))
    return k
