"""The controls the browser owns (scale, head, layer, mask) and the one channel Python sets them by.

On every page the sidebar's "Layer ℓ", "Head h" and "Mask future tokens", /attention's
live head control and scale slider, and /pretrained's temperature slider are the chart
component's own controls (``chart/control.js``), not Streamlit widgets. The browser owns
their values: a move shows on every chart that follows the control's frames in the next
animation frame, from the frames it holds, and is then reported here, where the report
is stored in session state under the control's key (``scale``, ``head``, ``layer``,
``causal``) that the URL, the CSVs, the arithmetic and the other pages read.

A report is the control's state value, ``{"value": i, "at": t}``: ``i`` the position of
the value among the control's values, ``t`` the time of the move in the browser's
clock. A state value goes with every later rerun request, so a report whose run was cut
short (a run interrupted before it reached its callbacks loses a trigger) is read again
when the control is drawn, and the newest move wins whichever of two controls of one key
made it.

Python writes a value back only on purpose: a link opened, a model changed, the
presenter bar's pick, a value clamped or snapped to a new model's range. It does so by
setting the session-state key, nothing else; each control's data carry ``placed``, which
changes only when the value there is not the one the browser last reported or was given
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
#: controls drawn, by their key: (shared key, values); the newest report's time the
#: controls were drawn with (their ``heard``), by shared key.
_REPORTED_AT, _DRAWN, _TOLD = "_channel_reported_at", "_channel_drawn", "_channel_told"
#: The frames /attention's controls move (the scale slider's key, the name the charts
#: follow: :data:`app.live.protocol.SOURCE`).
SOURCE = "att_scale"
#: What each shared key is called in the browser (what of the frames' source it moves).
NAMES = {"scale": "stop", "head": "head", "layer": "layer", "causal": "mask"}


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


def _take(key, state_key, values):
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
    index = int(state.get("value", -1))
    if not 0 <= index < len(values):
        return False
    report(state_key, values[index])
    return True


def _tell(state_key):
    """The newest report's time of ``state_key`` taken, as a control's data tell the browser."""
    heard = st.session_state.get(_REPORTED_AT, {}).get(state_key)
    if heard is not None:
        st.session_state.setdefault(_TOLD, {})[state_key] = heard
    return heard


def control(key, state_key, label, values, *, source=SOURCE, hidden=False, **options):
    """One of the browser's controls of ``state_key``, drawn where the caller is.

    Parameters
    ----------
    key : str, the element's key (two controls of one state key may be on a page)
    state_key : str, the session-state key it moves: ``scale`` (or another slider's stop),
        ``head``, ``layer`` or ``causal`` (a switch; the others are sliders)
    label : str
    values : sequence, the values it steps through, in order (heads: ``range(n_heads)``,
        the mask: ``(False, True)``, the scale: its stops)
    source : str, the frames it moves (the slider's key whose charts follow them)
    hidden : bool, drawn but not shown (it still places the value in the browser)
    options : the data's optional fields: ``labels`` (each value as shown, a slider's
        stops), ``help`` (what the control does), ``stop`` (the scale's stop the page is
        drawn at, for a control that mounts before the scale's slider), ``name`` (what
        it moves, if not :data:`NAMES`'s), ``on_change`` (called after a report is taken
        in its callback; it may call ``st.rerun`` with fragments' keys)
    """
    on_change = options.pop("on_change", None)
    values, value = tuple(values), st.session_state[state_key]
    # ``heard``: the browser's time of the newest move taken, so it knows it was heard
    data = {
        "kind": "control",
        "name": options.pop("name", NAMES.get(state_key)),
        "source": source,
        "label": label,
        "count": len(values),
        # a head past a smaller model's last is shown as its last (app.widgets.pickers)
        "value": values.index(value) if value in values else len(values) - 1,
        "placed": placed(state_key),
        "heard": _tell(state_key),
        "hidden": hidden,
        **options,
    }
    st.session_state.setdefault(_DRAWN, {})[key] = (state_key, values)

    def moved():
        if _take(key, state_key, values) and on_change is not None:
            on_change()

    attention_explorer.chart(key=key, data=data, on_value_change=moved)
    if _take(key, state_key, values):  # a report whose callback a cut-short run never ran
        st.rerun()


def catch_up():
    """In a fragment's run: if a report came in that the controls were not drawn with, run the app.

    Streamlit's frontend sends the changes of one task as one rerun, scoped to the first
    fragment among them: a scale step's release and a head move at once run only the
    slider's fragment, which redraws no control outside it (nor the link's other
    readers, the captions, the CSVs). The report itself is taken, by its callback or
    here from the control's state; then the whole app runs again with it.
    """
    if not in_fragment_run():  # a whole run draws them all
        return
    drawn = st.session_state.get(_DRAWN, {})
    for key, (state_key, values) in drawn.items():
        _take(key, state_key, values)
    taken = st.session_state.get(_REPORTED_AT, {})
    told = st.session_state.get(_TOLD, {})
    if any(at > told.get(state_key, -1.0) for state_key, at in taken.items()):
        st.rerun(scope="app")


def in_fragment_run():
    """Whether this is a run of fragments alone (a control's release in one), not the app's."""
    context = get_script_run_ctx()
    return context is not None and bool(context.fragment_ids_this_run)
