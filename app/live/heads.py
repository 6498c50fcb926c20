"""The live head: a head switch that the browser shows at once, from the layer's heads it holds.

When the browser draws every chart from the scale's float32 frames
(:func:`app.live.protocol.drawn_in_browser`), it also holds every head of the layer at the
current stop (:func:`app.live.sweeps.head_frames`, about 400 KB at 45 tokens), and the
charts' figures are drawn at a reference head (:data:`app.live.protocol.REFERENCE_HEAD`)
and the default stop: the browser puts the numbers of the head and stop shown into them.
The head controls, this page's and the sidebar's "Head h" (the browser's own,
:mod:`app.widgets.channel`), then show a new head on every chart in the next animation frame,
and tell Python the head after: the run that follows stores it (the presenter bar's
selector and the link show it), resends the charts' data unchanged, which the browser
does not redraw, and sends the new head's frames of every stop with the rest
(:func:`send_frames`). The browser also holds the head shown unmasked and masked at the
stop and, with a trained model, in every layer, sent after the charts
(:func:`send_switch_frames`): a click on the sidebar's "Mask future tokens" or a move of
its "Layer ℓ" is shown from them before its run, which then draws the figures as ever.
"""

from __future__ import annotations

import streamlit as st

from app.data import layers
from app.live import protocol, slider, sweeps
from app.state import controls, session
from app.views import attention_maps, heatmap
from app.widgets import channel, sidebar

#: The live head control's key, and the key of every stop's frames of the head shown.
HEAD, SWEEP = "att_head", f"{protocol.SOURCE}_sweep"
#: The key of the frames a layer switch and a mask toggle are shown from.
SWITCHES = f"{protocol.SOURCE}_switch_frames"
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
        slider.send_frames([sweeps.scale_frames(settings, head)[1]])
    frame_id = sweeps.layer_id(settings)
    left, right = st.columns(2)
    scores = layers.layer(settings).attention.heads.scores  # [n_heads, n, n]
    binding = {"drawn": 0, "heatmap": "scores", "limits": "scores", "stopless": True}
    binding["head"] = protocol.REFERENCE_HEAD  # the head its figure is drawn at
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
    channel.control(HEAD, "head", LABEL, range(n_heads), hidden=hidden, stop=stop)


def holds_heads(settings):
    """Whether the browser gets the layer's heads at the stop: not with one head."""
    return settings.shape[1] > 1


def send_frames(settings, head):
    """Send what a head switch is shown from, in one element of height 0, in every run.

    With more than one head: every head of the layer at the current stop
    (:func:`app.live.sweeps.head_frames`). With one head, nothing to switch to: the
    scale's frames of every stop instead (:func:`send_sweep`'s). Sent before the charts,
    whose exact figures are drawn from them at any head but the one their figures are
    drawn at (the raw scores above them too). All cached; unchanged, Streamlit resends them
    as a reference.
    """
    if not holds_heads(settings):
        slider.send_frames([sweeps.scale_frames(settings, head)[1]])
        return
    at = settings.replace(scale=st.session_state["scale"])
    slider.send_frames([sweeps.head_frames(at)[1]])


def send_switch_frames(settings, head):
    """Send what a layer switch and a mask toggle are shown from, after the charts.

    Head ``head`` at the current stop in every layer (a trained model's) and unmasked and
    masked. Only a move of the sidebar's layer or mask needs them, so they come after the
    charts: computing them (the head in 30 layers, 88 ms at 45 SmolLM2 tokens) and sending
    them (1 MB) does not hold up the first screen. A move before they arrive waits for its
    run, as on a first load.
    """
    if not holds_heads(settings):
        return
    at = settings.replace(scale=st.session_state["scale"])
    payloads = []
    if settings.trained:
        payloads.append(sweeps.layer_frames(at.replace(layer=0), head)[1])
    payloads.append(sweeps.mask_frames(at.replace(causal=False), head)[1])
    slider.send_frames(payloads, key=SWITCHES)


def send_sweep(settings, head):
    """Send every stop's frames of head ``head`` (2 MB at 45 tokens), after the charts.

    In the same run as :func:`send_frames`, last: only a move of the scale needs them, and
    the charts' data and the frames they are drawn from go first. They do not depend on
    the stop, so they are outside the slider's fragment, which a release reruns.
    """
    if holds_heads(settings):
        slider.send_frames([sweeps.scale_frames(settings, head)[1]], key=SWEEP)
