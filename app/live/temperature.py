"""The temperature's live section on /pretrained: its slider and the next-token bars it recolours.

The engine computes the next token's top k, and every other token's probability together,
at every stop of the slider at once (:func:`app.data.models.sweep`, cached per model and
text). They go to the browser as frames in the scale's protocol (:mod:`app.live.protocol`):
while the slider is dragged the bars switch between them, and the chart draws the exact
figure of any stop from them (its data, drawn at temperature 1, are the same at every
stop). A release only stores the stop, in a fragment of the slider's own, for the CSV and
for the next visit of the page.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from app.data import models
from app.live import protocol, slider
from app.views import next_token
from app.widgets import channel

#: The slider's key (the name its frames and the bars follow), and the stop it starts on:
#: temperature 1, the model's own distribution.
SOURCE = "pretrained_temperature"
DEFAULT = 1.0
#: Session-state keys of the slider's stop and its :class:`HeldStop` (kept across pages
#: and reruns).
STOP, HELD = "_pretrained_temperature_stop", "_pretrained_temperature_held"
#: The slider's label.
LABEL = "Temperature T: the next token's probabilities are softmax(logits / T)"
#: The stop the bars' figure is drawn at: the browser puts the current stop's frame in it.
DRAWN = models.TEMPERATURES.index(DEFAULT)


def frames(sweep):
    """The sweep as frames: each stop's bars, the k likeliest then every other token.

    Returns
    -------
    frame_id, payload : as :func:`app.live.protocol.pack` returns them
    """
    bars = np.concatenate([sweep.probabilities, sweep.rest[:, None]], axis=1)[:, None, :]
    labels = [next_token.temperature_label(t) for t in sweep.temperatures]
    return protocol.pack(SOURCE, {"probabilities": bars}, sweep.temperatures, labels, {}, labels)


def temperature_slider():
    """The temperature slider: it needs no pass, so a page draws it before the text's.

    Its frames and the bars it moves come after the pass (:func:`temperature_bars`): the
    bars are then the first thing the page sends once the pass is done, not behind
    elements the browser must lay out first.
    """
    _slider(st.session_state.setdefault(HELD, HeldStop(DRAWN)))


def temperature_bars(folder, text):
    """The next token's top k at the slider's stop, and the frames the slider plays.

    Parameters
    ----------
    folder : str, a causal model's checkpoint folder (GPT-2)
    text : str, the text whose next token is predicted
    """
    tokens, sweep = models.sweep(folder, text)
    frame_id, payload = frames(sweep)
    slider.send_frames([payload], key=f"{SOURCE}_frames")
    held = st.session_state.setdefault(HELD, HeldStop(DRAWN))
    live = protocol.follow(
        SOURCE, frame_id, DRAWN, bar="probabilities", row=0, title=next_token.TITLE
    )
    next_token.show(
        st, "pretrained_next", tokens, sweep, DRAWN, live=live, csv_stop=lambda: held.stop
    )


@st.fragment
def _slider(held):
    """The slider alone: a release stores the stop in the session and in ``held``, nothing else.

    One of the browser's own controls (:mod:`app.widgets.channel`), moving the bars'
    frames; Python never places it: it stays where the visitor left it.
    """
    held.stop = st.session_state.setdefault(STOP, DRAWN)
    stops = range(len(models.TEMPERATURES))
    labels = [next_token.temperature_label(t) for t in models.TEMPERATURES]

    def released():
        held.stop = st.session_state[STOP]

    channel.control(
        SOURCE, STOP, LABEL, stops, source=SOURCE, name="stop", labels=labels, on_change=released
    )


@dataclass
class HeldStop:
    """The slider's stop, in a mutable holder.

    A CSV button reads it when it is clicked, outside the script thread, where session
    state cannot be read.
    """

    stop: int
