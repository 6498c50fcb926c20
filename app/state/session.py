"""The shared controls in the session and in the browser's URL: the Streamlit side of the state.

The values live in ``st.session_state`` under their keys (:mod:`app.state.controls`);
the URL mirrors them (:mod:`app.state.links`) after every run, and a session starts
from the URL it opened.
"""

from __future__ import annotations

import streamlit as st

from app.state.controls import CONTROLS, reconcile_values
from app.state.links import EXTRA_PARAMS, format_value, parse_query, url_params


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

    The whole query string is sent on every run, changed or not: Streamlit's copy of it
    is the one the browser sent with the run's request, which may predate the last
    run's write (a head moved back while the run of its first move was on its way), so a
    write skipped as unchanged could leave the address bar on the older value. The
    browser adds no history entry for an address it already shows.
    """
    values = current()
    wanted = url_params(values)
    for key, opening in OPENING_VALUES.get(page, {}).items():
        if values[key] != opening:
            wanted[key] = format_value(key, values[key])
    keep = EXTRA_PARAMS if keep_step else EXTRA_PARAMS - {"step"}
    url = {}
    for key in st.query_params:  # in the address's order
        if key in wanted:
            url[key] = wanted[key]
        elif key not in CONTROLS and key in keep:
            url[key] = st.query_params.get_all(key)
    st.query_params.from_dict({**url, **wanted})


#: Session-state key of the name this run's exported files start with (:func:`name_files`).
_FILES = "_file_stem"


def name_files(stem):
    """Name the files of the charts drawn after this in the run by ``stem`` (file-name safe).

    By default a chart's PNG and CSV are named after the sidebar's settings; a page that
    shows another model (/pretrained) names its own, so a figure taken away says what it
    shows. ``None`` goes back to the settings: the app does so before each page runs.
    """
    st.session_state[_FILES] = stem


def file_stem():
    """The name set by :func:`name_files` for this run's charts, or None."""
    return st.session_state.get(_FILES)


def presenting():
    """Whether this session is in presentation mode (``present=1`` in the URL)."""
    return st.query_params.get("present") == "1"


#: The screen assumed until the browser has said its size: the smallest projector's.
DEFAULT_VIEWPORT = (1280, 720)


def viewport():
    """The browser's (width, height) in CSS pixels, as it last said; else the default."""
    return tuple(st.session_state.get("_viewport") or DEFAULT_VIEWPORT)


def set_viewport(width, height):
    """Remember the browser's size, as it reported it (presentation mode)."""
    st.session_state["_viewport"] = (int(width), int(height))
