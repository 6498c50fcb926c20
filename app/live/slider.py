"""The scale slider that lives in the browser, and the frames it plays, sent to the browser.

The slider is the chart component's (:mod:`attention_explorer`): while it is dragged the
charts that follow it switch between engine-computed frames (:mod:`app.live.protocol`);
on release the stop comes back to Python, into ``st.session_state["scale"]`` and the
held scale that CSV buttons read.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

import attention_explorer
from app.live import protocol, sweeps
from app.state import controls, session
from app.widgets import channel

#: Session-state key of the holder of the current scale.
_HELD = "_scale_held"


def send_frames(payloads, key=f"{protocol.SOURCE}_frames"):
    """Send packed frames to the browser, all in one element of height 0 (a bundle).

    The section's frames (:func:`app.live.heads.send_frames`), one stop's
    (:func:`send_stop_frames`) or 16-bit ones; the charts that follow the slider read them
    (:mod:`app.live.protocol`). Unchanged, Streamlit resends them as a reference.
    """
    attention_explorer.chart(key=key, data=protocol.bundle(payloads), height=0)


#: Past :data:`app.live.protocol.MAX_TOKENS` tokens the browser holds the frames of the current
#: stop and of the stops this many steps either side, so a keyboard step shows its stop
#: with no frames from the server.
STOPS_AHEAD = 1


def send_stop_frames(settings, head):
    """Send the frames of the current stop and of its neighbours, one element per stop.

    Each stop goes to slot ``stop % (2 · STOPS_AHEAD + 1)``, so a step changes one slot
    alone: the stop that came into reach (computed here, after the release, and sent
    while the browser already shows the new stop from frames it holds). The slots that
    keep their stop are resent as references. The current stop is computed and sent
    first: after a jump (a drag's release) its exact figures wait for it alone.
    """
    options = controls.scale_options(*settings.shape)
    stop = options.index(settings.scale)
    width = 2 * STOPS_AHEAD + 1
    slots = [st.empty() for _ in range(width)]  # fixed places: a slot's element stays mounted
    near = sorted(range(stop - STOPS_AHEAD, stop + STOPS_AHEAD + 1), key=lambda s: abs(s - stop))
    for other in near:
        if 0 <= other < len(options):
            frames = sweeps.stop_frames(settings.replace(scale=options[other]), head)[1]
            with slots[other % width]:
                send_frames([frames], key=f"{protocol.SOURCE}_frames_{other % width}")


#: The scale slider's label.
LABEL = "Scale s in softmax(s · q·kᵀ), logarithmic"


def scale_slider(on_release=None):
    """The logarithmic scale slider, which lives in the browser while it moves.

    One of the browser's own controls (:mod:`app.widgets.channel`): while it is dragged
    the charts that follow it switch between the engine-computed frames; on release (or
    a keyboard step) the stop is reported here, into ``st.session_state["scale"]`` and
    :func:`held_scale`. Without frames the charts update from the server on release.
    ``on_release`` runs after the stop is stored (it may call ``st.rerun`` with a
    fragment's key to rerun that fragment instead of this one).
    """
    d_model, heads = controls.model_shape(session.current())
    options = controls.scale_options(d_model, heads)

    def released():
        held_scale()
        if on_release is not None:
            on_release()

    labels = [controls.scale_label(value, d_model, heads) for value in options]
    # The stops' labels in a whole run: the browser keeps them through its fragment's runs.
    sent = {} if channel.in_fragment_run() else {"labels": labels}
    channel.control(protocol.SOURCE, "scale", LABEL, options, on_change=released, **sent)


def held_scale():
    """The session's current scale in a holder that code outside the script thread can read.

    A CSV button's data are built when it is clicked, in a server thread where session
    state cannot be read: they read ``held_scale().scale``, which the slider's release
    sets, so a CSV drawn before a release is the engine's array at the stop shown.
    """
    held = st.session_state.setdefault(_HELD, HeldScale(st.session_state["scale"]))
    held.scale = st.session_state["scale"]
    return held


@dataclass
class HeldScale:
    """The current scale, in a mutable holder: read where session state cannot be."""

    scale: float
