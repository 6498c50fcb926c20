"""The neuron view's colour bar and legend (issue #13, item 8): the colour bar sat over
the "q·k and scaled" bars, and those two reds had no legend."""

import numpy as np

from app.views import neuron_view
from engine.arithmetic import query_stages

LABELS = ["[CLS]", "the", "trophy", "it", "[SEP]"]


def neuron_figure():
    rng = np.random.default_rng(0)
    k = rng.standard_normal((len(LABELS), 8))
    stages = query_stages(rng.standard_normal(8), k)
    return neuron_view.figure(stages, k, LABELS, "it")


def test_colour_bar_stays_clear_of_the_bars():
    fig = neuron_figure()
    bar = next(trace.colorbar for trace in fig.data if trace.type == "heatmap" and trace.showscale)
    bars_start = fig.layout.xaxis3.domain[0]  # the "q·k and scaled" column
    if bar.orientation == "h":
        assert bar.xanchor == "center"
        assert bar.x + bar.len / 2 <= bars_start
        assert bar.y < 0  # under the heatmaps, not over them
    else:
        assert bar.x >= 1
    assert bar.title.text


def test_the_two_score_bars_have_a_legend():
    fig = neuron_figure()
    scores = [trace for trace in fig.data if trace.type == "bar" and trace.xaxis == "x3"]
    assert len(scores) == 2
    assert fig.layout.showlegend
    assert all(trace.showlegend for trace in scores)
    assert scores[0].name == "q·k"
    assert scores[1].name.startswith("scaled")
    assert scores[0].marker.color != scores[1].marker.color
    softmax = [trace for trace in fig.data if trace.type == "bar" and trace.xaxis == "x4"]
    assert [trace.showlegend for trace in softmax] == [False]
