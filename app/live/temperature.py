"""The temperature's live section on /pretrained: its slider and the next-token bars it recolours.

The engine computes the top k's probabilities at every stop of the slider at once
(:func:`app.data.models.sweep`, cached per model and text), and the slider and the bars
live in a fragment of their own: moving the slider reruns only them, and they read the
stop's frame from the cache, with no model pass. Unlike the scale's, these frames stay on
the server: a bar chart of k numbers per stop is redrawn in a few milliseconds, where the
scale's browser protocol (:mod:`app.live.protocol`) carries heatmaps, their colour limits
and their cells' arithmetic.
"""

from __future__ import annotations

import streamlit as st

from app.data import models
from app.views import next_token

#: The slider's key, and the stop it starts on: temperature 1, the model's own distribution.
SLIDER = "pretrained_temperature"
DEFAULT = 1.0


@st.fragment
def temperature_section(folder, text):
    """The temperature slider and the next token's top k at the stop it shows.

    Parameters
    ----------
    folder : str, a causal model's checkpoint folder (GPT-2)
    text : str, the text whose next token is predicted
    """
    temperature = st.select_slider(
        "Temperature T: the next token's probabilities are softmax(logits / T)",
        models.TEMPERATURES,
        value=DEFAULT,
        key=SLIDER,
        format_func=next_token.temperature_label,
        persist_state="session",
    )
    tokens, frames = models.sweep(folder, text)
    next_token.show(st, "pretrained_next", tokens, frames, models.TEMPERATURES.index(temperature))
