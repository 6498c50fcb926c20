"""The live head: a head switch that the browser shows at once, from the layer's heads it holds.

When the browser draws every chart from the scale's float32 frames
(:func:`app.live.protocol.drawn_in_browser`), it also holds every head of the layer at the
current stop (:func:`app.live.sweeps.head_frames`, about 400 KB at 45 tokens), and the
charts' figures are drawn at a reference head (:data:`app.live.protocol.REFERENCE_HEAD`)
and the default stop: the browser puts the numbers of the head and stop shown into them.
The head controls, this page's and the sidebar's "Head h" (the browser's own,
:mod:`app.widgets.channel`), then show a new head on every chart in the next animation frame,
and tell Python the head after: the run that follows stores it (the presenter bar's
selector and the link show it) and resends the charts' data unchanged, which the browser
does not redraw; the scale slider asks for the new head's frames of every stop once that
run is over (:func:`app.live.slider.send_frames_when_asked`). The browser also holds the
head shown unmasked and masked at the stop (:func:`send_mask_frames`) and, with MiniLM, in
every layer (:func:`send_layer_frames`): a click on the sidebar's "Mask future tokens" or
a move of its "Layer ℓ" is shown from them before its run, which then draws the figures
as ever.
"""

from __future__ import annotations

import streamlit as st

import attention_explorer
from app.data import layers
from app.live import protocol, slider, sweeps
from app.state import controls, session
from app.views import attention_maps, heatmap
from app.widgets import channel, sidebar

#: The live head control's key, and the key of the layer's heads at the current stop.
HEAD, HEAD_FRAMES = "att_head", "att_head_frames"
#: The keys of the head shown in every layer at the current stop, and of it unmasked and
#: masked there.
LAYER_FRAMES, MASK_FRAMES = "att_layer_frames", "att_mask_frames"
#: The control's label: the sidebar's.
LABEL = sidebar.HEAD_LABEL


def head_section(settings, head, labels):
    """The head's frames of every stop, the live head control, and the raw scores.

    The control comes first, then two columns: the raw scores on the left.

    Parameters
    ----------
    settings : app.state.controls.Settings, the layer the page shows
    head : int, the head shown
    labels : sequence of str, the layer's tokens

    Returns
    -------
    the right-hand column, beside the raw scores
    """
    per_stop, in_browser = sweeps.frames_mode(settings)
    live = in_browser and not per_stop
    if live:  # first: a switch from the sidebar is shown as soon as the control hears of it
        _head_control(settings, head)
    elif not per_stop:  # 16-bit frames, drawn over by the server; else with the slider
        slider.send_frames(sweeps.scale_frames(settings, head)[1])
    frame_id = sweeps.layer_id(settings)
    left, right = st.columns(2)
    scores = layers.layer(settings).attention.heads.scores  # [n_heads, n, n]
    binding = {"drawn": 0, "heatmap": "scores", "limits": "scores", "stopless": True}
    attention_maps.show_scores(
        left,
        "att_raw",
        scores[protocol.REFERENCE_HEAD if live else head],
        list(labels),
        "Raw scores q·kᵀ",
        csv=heatmap.table(scores[head], labels, labels),  # the head shown's, whatever is drawn
        live=protocol.follow(protocol.SOURCE, frame_id, **binding) if live else None,
    )
    return right


def _head_control(settings, head):
    """The head control the browser answers itself; hidden with one head or when presenting.

    One of the browser's head controls (:mod:`app.widgets.channel`), as the sidebar's "Head h"
    is: a move of either shows on the charts at once and moves the other. In presentation
    mode the presenter bar's head selector is the page's: a pick there reaches the charts
    through this control's data.
    """
    n_heads = settings.shape[1]
    stop = controls.scale_options(*settings.shape).index(st.session_state["scale"])
    hidden = n_heads == 1 or session.presenting()
    channel.control(HEAD, "head", LABEL, n_heads, hidden=hidden, stop=stop)


def holds_heads(settings):
    """Whether the browser gets the layer's heads at the stop: not with one head."""
    return settings.shape[1] > 1


def send_head_frames(settings):
    """Send every head of the layer at the current stop (an element of height 0).

    Not with one head, which has nothing to switch to (:func:`holds_heads`): a scale step
    then sends nothing new.
    """
    if not holds_heads(settings):
        return
    at = settings.replace(scale=st.session_state["scale"])
    attention_explorer.chart(key=HEAD_FRAMES, data=sweeps.head_frames(at)[1], height=0)


def send_layer_frames(settings, head, asked):
    """Send head ``head`` in every layer at the current stop (an element of height 0).

    A move of the sidebar's layer is shown from these as it happens (``control.js``), before
    its run. MiniLM only (the seeded model has one layer). Made in the run that sends the
    scale's frames of every stop (``asked``: after a switch's run, not in it, which they
    would slow) and sent in every run after while the text, settings, head and stop are
    the same: a layer switch keeps them, so walking through the layers shows each at once.
    """
    if settings.trained:
        at = settings.replace(scale=st.session_state["scale"], layer=0)
        _send_kept(LAYER_FRAMES, sweeps.layer_frames, at, head, asked)


def send_mask_frames(settings, head, asked):
    """Send head ``head`` at the current stop unmasked and masked (an element of height 0).

    A click on the sidebar's "Mask future tokens" is shown from these as it happens
    (``control.js``), before its run, which then draws the masked (or unmasked) figures as
    ever. Made and kept as the layer's frames are (:func:`send_layer_frames`): a toggle
    keeps them, so toggling back and forth shows each state at once.
    """
    at = settings.replace(scale=st.session_state["scale"], causal=False)
    _send_kept(MASK_FRAMES, sweeps.mask_frames, at, head, asked)


def _send_kept(key, frames, at, head, asked):
    """Send ``frames(at, head)`` as element ``key`` once ``asked``.

    And in every run after while ``at`` and ``head`` stay the same: Streamlit then resends
    them as a reference.
    """
    sent = f"_{key}_sent"  # the session-state key of what they were last sent for
    if not asked and st.session_state.get(sent) != (at, head):
        return
    payload = frames(at, head)[1]
    if payload is not None:
        st.session_state[sent] = (at, head)
        attention_explorer.chart(key=key, data=payload, height=0)
