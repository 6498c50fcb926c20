"""The controls the browser owns: /attention's scale and live head, /pretrained's temperature.

A move shows on every chart that follows the control's frames in the next animation
frame, from the frames the browser holds (``chart/control.js``), and is then reported
here as the control's state value ``{"value": i, "at": t}``: ``i`` the value's position
among the control's values, ``t`` the move's time in the browser's clock. The report is
stored under the control's session-state key (``scale``, ``head``), which the link, the
CSVs, the arithmetic and the sidebar read. A state value goes with every later rerun
request, so a report whose run was cut short before its callback is taken when the
control is next drawn; ``t`` tells it from one already taken.

Python writes a value only on purpose: a link, a new model, the sidebar's "Head h" (a
plain widget), the presenter bar. Each control's data carry ``placed``, which changes
only when the value is not the one the browser last reported or was given, and the
browser takes a value from the data only when ``placed`` changes: a run that follows the
user's move never moves the control back.
"""

from __future__ import annotations

import secrets

import streamlit as st

import attention_explorer

#: Session-state keys: the value the browser holds and how many times Python placed it,
#: by state key; this session's name (a new session after a lost connection came back
#: places every value again); the time of the newest report taken, by control key.
_PLACED, _SESSION, _TAKEN = "_channel_placed", "_channel_session", "_channel_taken"
#: The frames /attention's controls move (the scale slider's key, the name the charts
#: follow: :data:`app.live.protocol.SOURCE`).
SOURCE = "att_scale"


def placed(state_key):
    """How many times Python has placed the value of ``state_key`` in the browser, as a name."""
    value = st.session_state[state_key]
    known = st.session_state.setdefault(_PLACED, {})
    held, count = known.get(state_key, (None, 0))
    if state_key not in known or held != value:
        known[state_key] = (value, count + 1)
    session = st.session_state.setdefault(_SESSION, secrets.token_hex(4))
    return f"{session}:{known[state_key][1]}"


def _take(key, state_key, values):
    """Take the report in control ``key``'s state if it is new; whether it was.

    A report out of the control's range now (a move made before a new model's run) is
    dropped.
    """
    state = (st.session_state.get(key) or {}).get("value")
    taken = st.session_state.setdefault(_TAKEN, {})
    if not isinstance(state, dict) or float(state.get("at", 0.0)) <= taken.get(key, -1.0):
        return False
    taken[key] = float(state["at"])
    index = int(state.get("value", -1))
    if not 0 <= index < len(values):
        return False
    st.session_state[state_key] = values[index]
    known = st.session_state.setdefault(_PLACED, {})
    known[state_key] = (values[index], known.get(state_key, (None, 0))[1])  # not a placement
    return True


def control(key, state_key, label, values, *, source=SOURCE, hidden=False, **options):
    """One of the browser's controls of ``state_key``, drawn where the caller is.

    Parameters
    ----------
    key : str, the element's key
    state_key : str, the session-state key it moves: ``scale`` (or another slider's
        stop) or ``head``
    label : str
    values : sequence, the values it steps through, in order
    source : str, the frames it moves (the slider's key whose charts follow them)
    hidden : bool, drawn but not shown (it still places the value in the browser)
    options : the data's optional fields: ``name`` (what it moves: ``head`` for the
        head, else ``stop``), ``labels`` (each value as shown), ``stop`` (the scale's stop
        the page is drawn at, for a control that mounts before the scale's slider),
        ``on_change`` (called after a report is taken in its callback; it may call
        ``st.rerun`` with fragments' keys)
    """
    on_change = options.pop("on_change", None)
    values, value = tuple(values), st.session_state[state_key]
    data = {
        "kind": "control",
        "name": options.pop("name", "head" if state_key == "head" else "stop"),
        "source": source,
        "label": label,
        "count": len(values),
        # a head past a smaller model's last is shown as its last
        "value": values.index(value) if value in values else len(values) - 1,
        "placed": placed(state_key),
        "heard": st.session_state.get(_TAKEN, {}).get(key),  # the newest report taken
        "hidden": hidden,
        **options,
    }

    def moved():
        if _take(key, state_key, values) and on_change is not None:
            on_change()

    attention_explorer.chart(key=key, data=data, on_value_change=moved)
    if _take(key, state_key, values):  # a report whose callback a cut-short run never ran
        st.rerun()
