"""The controls the browser owns: head, layer and mask, and the one channel Python writes them by.

On every page the sidebar's "Layer ℓ", "Head h" and "Mask future tokens", and /attention's
live head control, are the chart component's own controls (``chart/control.js``), not
Streamlit widgets. The browser owns their values: a move shows on every chart that
follows the scale's frames in the next animation frame, from the frames it holds, and is
then reported here, where :func:`report` stores it in session state under the shared key
(``head``, ``layer``, ``causal``) that the URL, the CSVs, the arithmetic and the other
pages read.

A report is the control's state value, ``{"value": v, "at": t}``, with ``t`` the time of
the move in the browser's clock: a state value goes with every later rerun request, so
a report whose run was cut short (a run interrupted before it reached its callbacks
loses a trigger) is read again, and the newest move wins whichever of two controls of
one key made it.

Python writes a value back only on purpose: a link opened, a model changed, the
presenter bar's pick, a value clamped to a new model's range. It does so by setting the
session-state key, nothing else; each control's data carry ``placed``, which changes only
when the value there is not the one the browser last reported or was given
(:func:`placed`), and the browser takes a value from the data only when ``placed``
changes. So a run that follows the user's move never moves the control back, however
many moves are on their way, and there is no other path from Python to the control.
"""

from __future__ import annotations

import secrets

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

import attention_explorer

#: Session-state keys: the values the browser last reported or was given, by shared key;
#: how many times Python placed each; this session's name, so that a new session (after a
#: lost connection came back) places every value again.
KNOWN, _PLACED, _SESSION = "_channel_known", "_channel_placed", "_channel_session"
#: Session-state keys: the browser's time of the newest report taken, by shared key; the
#: controls drawn, by their key: (shared key, number of values); the newest report's time
#: the controls were drawn with (their ``heard``), by shared key.
_REPORTED_AT, _DRAWN, _TOLD = "_channel_reported_at", "_channel_drawn", "_channel_told"
#: The frames the controls move (the scale slider's key, the name the charts follow:
#: :data:`app.live.protocol.SOURCE`).
SOURCE = "att_scale"
#: What each shared key is called in the browser (the part of the frames' source it moves).
NAMES = {"head": "head", "layer": "layer", "causal": "mask"}


def placed(state_key):
    """How many times Python has placed the value of ``state_key`` in the browser, as a name.

    A value the browser did not report (a link, a new model, the presenter bar) counts as
    placed once, the first time a control of it is drawn; every control of the key in the
    run carries the same name.
    """
    value = st.session_state[state_key]
    known = st.session_state.setdefault(KNOWN, {})
    counts = st.session_state.setdefault(_PLACED, {})
    if state_key not in known or known[state_key] != value:
        counts[state_key] = counts.get(state_key, 0) + 1
        known[state_key] = value
    session = st.session_state.setdefault(_SESSION, secrets.token_hex(4))
    return f"{session}:{counts[state_key]}"


def report(state_key, value):
    """The browser moved ``state_key``'s control to ``value``: store it, as it shows it."""
    st.session_state[state_key] = value
    st.session_state.setdefault(KNOWN, {})[state_key] = value


def _take(key, state_key, count):
    """Take the report in control ``key``'s state if it is newer than any taken; whether it was.

    A report out of the control's range now (a move made before a new model's run) is
    heard, and dropped.
    """
    state = (st.session_state.get(key) or {}).get("value")
    if not isinstance(state, dict):
        return False
    taken = st.session_state.setdefault(_REPORTED_AT, {})
    at = float(state.get("at", 0.0))
    if at <= taken.get(state_key, -1.0):
        return False
    taken[state_key] = at
    value = int(state.get("value", -1))
    if not 0 <= value < count:
        return False
    report(state_key, bool(value) if state_key == "causal" else value)
    return True


def _tell(state_key):
    """The newest report's time of ``state_key`` taken, as a control's data tell the browser."""
    heard = st.session_state.get(_REPORTED_AT, {}).get(state_key)
    if heard is not None:
        st.session_state.setdefault(_TOLD, {})[state_key] = heard
    return heard


def control(key, state_key, label, count, *, hidden=False, stop=None, tooltip=None):
    """One of the browser's controls of ``state_key``, drawn where the caller is.

    Parameters
    ----------
    key : str, the element's key (two controls of one state key may be on a page)
    state_key : "head", "layer" or "causal"; the mask is a switch, the others sliders
    label : str
    count : int, the number of values (heads, layers); 2 for the mask
    hidden : bool, drawn but not shown (it still places the value in the browser)
    stop : int, optional, the scale's stop the page is drawn at (for a control that
        mounts before the scale's slider)
    tooltip : str, optional, what the control does
    """
    value = st.session_state[state_key]
    # ``heard``: the browser's time of the newest move taken, so it knows it was heard
    data = {
        "kind": "control",
        "name": NAMES[state_key],
        "source": SOURCE,
        "label": label,
        "count": count,
        "value": int(value),
        "placed": placed(state_key),
        "heard": _tell(state_key),
        "hidden": hidden,
    }
    if stop is not None:
        data["stop"] = stop
    if tooltip is not None:
        data["help"] = tooltip

    st.session_state.setdefault(_DRAWN, {})[key] = (state_key, count)

    def moved():
        _take(key, state_key, count)

    attention_explorer.chart(key=key, data=data, on_value_change=moved)
    if _take(key, state_key, count):  # a report whose callback a cut-short run never ran
        st.rerun()


def catch_up():
    """In a fragment's run: if a report came in that the controls were not drawn with, run the app.

    Streamlit's frontend sends the changes of one task as one rerun, scoped to the first
    fragment among them: a scale step's release and a head move at once run only the
    slider's fragment, which redraws no control outside it (nor the link's other
    readers, the captions, the CSVs). The report itself is taken, by its callback or
    here from the control's state; then the whole app runs again with it.
    """
    context = get_script_run_ctx()
    if context is None or not context.fragment_ids_this_run:  # a whole run draws them all
        return
    drawn = st.session_state.get(_DRAWN, {})
    for key, (state_key, count) in drawn.items():
        _take(key, state_key, count)
    taken = st.session_state.get(_REPORTED_AT, {})
    told = st.session_state.get(_TOLD, {})
    if any(at > told.get(state_key, -1.0) for state_key, at in taken.items()):
        st.rerun(scope="app")
