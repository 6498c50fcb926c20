"""The next token of a causal model (GPT-2): its k likeliest tokens at a temperature, as bars.

The probabilities are :func:`engine.generate.temperature_sweep`'s, one frame per stop of
the temperature slider; the bars are coloured on the weights' 0–1 scale, so a lower
temperature turns the likeliest bar bright and the others dark. The temperature acts on
the output logits, ``softmax(z / T)``, not on the attention softmax.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.views import axes, chart, style


def token_label(token):
    """A token string as a label: byte-level BPE's space (Ġ) and newline (Ċ) shown as ␣ and ↵.

    A byte-level token is shown by its token string, not its text: alone it may be part of
    a character, which decodes to nothing printable.
    """
    return token.replace("Ġ", "␣").replace("Ċ", "↵") if token else "∅"


def temperature_label(temperature):
    """A stop of the temperature slider as it is shown: 0 is greedy, 1 the model's own."""
    if temperature == 0:
        return "0 (greedy)"
    if temperature == 1:
        return "1 (the model's own)"
    return f"{temperature:.3g}"


#: The chart's title; the browser writes the stop it shows into ``{scale}``.
TITLE = "The next token at temperature {scale}"
#: The last bar: every token outside the top k, together.
REST = "all others"


def figure(tokens, probabilities, rest, temperature):
    """The k likeliest next tokens at one temperature, likeliest first, then all the others.

    Parameters
    ----------
    tokens : sequence of k str, the model's token strings
    probabilities : ndarray of shape (k,)
    rest : float, every other token's probability together
    temperature : float
    """
    p = np.append(np.asarray(probabilities, dtype=np.float64), rest)
    fig = go.Figure(
        go.Bar(
            x=axes.axis_labels([*(token_label(t) for t in tokens), REST]),
            y=p,
            marker={"color": style.weight_colors(p)},
            hovertemplate="next token %{x}<br>probability %{y:.4f}<extra></extra>",
        )
    )
    return style.frame(
        fig,
        TITLE.replace("{scale}", temperature_label(temperature)),
        340,
        yaxis={"range": [0, 1], "title": "probability"},
        xaxis=axes.token_axis(fig.data[0].x, "next token") | {"autotickangles": axes.TICK_ANGLES},
    )


def table(tokens, frames, stop):
    """The top k at the temperature of ``stop``, and every other token as one row."""
    return pd.DataFrame(
        {
            "token": [*tokens, REST],
            "id": [*(int(i) for i in frames.ids), None],
            "temperature": frames.temperatures[stop],
            "probability": [*frames.probabilities[stop], frames.rest[stop]],
        }
    )


def show(container, key, tokens, frames, stop, *, live=None, csv_stop=None):
    """Draw :func:`figure` at ``stop`` of the sweep ``frames``; the CSV is :func:`table`.

    ``live``: the bars follow the temperature's frames in the browser
    (:func:`app.live.protocol.follow`); the figure at ``stop`` is then their reference.
    ``csv_stop``: a function giving the stop shown when the CSV button is clicked.
    """
    fig = figure(tokens, frames.probabilities[stop], frames.rest[stop], frames.temperatures[stop])
    csv = (
        table(tokens, frames, stop)
        if csv_stop is None
        else (lambda: table(tokens, frames, csv_stop()))
    )
    return chart.draw(container, fig, key, table=csv, live=live)


def steps_table(steps, temperature=0.0):
    """Generation step by step: the token chosen, its probability, the runners-up.

    ``probability`` is the model's own (softmax at T = 1), whatever the temperature: at
    T = 0 the pick is certain by construction, and the model's own probability says how
    sure the model was. Above 0 the probability it was drawn with stands beside it. The
    runners-up are at the step's temperature, at the model's own for greedy steps.
    """
    rows = []
    for number, step in enumerate(steps):
        candidates = step.candidates
        row = {"step": number, "chosen": token_label(step.token), "probability": step.probability}
        if temperature > 0:
            drawn = np.flatnonzero(candidates.ids == step.id)
            at = f"probability at T = {temperature:.3g}"
            row[at] = float(candidates.probabilities[drawn[0]]) if drawn.size else None
        row["likeliest"] = ", ".join(
            f"{token_label(t)} {p:.2f}"
            for t, p in zip(candidates.tokens[:3], candidates.probabilities[:3], strict=True)
        )
        rows.append(row)
    return pd.DataFrame(rows)
