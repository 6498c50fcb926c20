"""The three views of issue #43, without Streamlit: sinks, grouped-query attention, rotary."""

import numpy as np
import pytest

from app.views import gqa, rotary, sinks, style
from engine import analysis

LABELS = ["<s>", "The", "cat", "sat", "on", "the", "mat"]


def weights(n=7, seed=0, first=0.6):
    """Causal rows that give the first token ``first`` and spread the rest."""
    rng = np.random.default_rng(seed)
    out = np.zeros((2, 4, n, n))
    for i in range(n):
        rest = rng.dirichlet(np.ones(i)) * (1 - first) if i else np.zeros(0)
        out[..., i, 0] = first if i else 1.0
        out[..., i, 1 : i + 1] = rest
    return out


def found(n=7):
    return analysis.attention_sinks(weights(n), np.tril(np.ones((n, n), dtype=bool)))


def test_the_sink_figure_draws_the_engines_numbers():
    result = found()
    fig = sinks.figure(result, LABELS)
    heat, bar, black = fig.data  # the numbers black on light cells: a clear heatmap over them
    assert black.name == style.TEXT_OVERLAY
    assert (black.xaxis, black.yaxis) == (heat.xaxis, heat.yaxis)
    np.testing.assert_allclose(heat.z, result.first, rtol=1e-6)
    assert heat.z.dtype == np.float32
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    np.testing.assert_allclose(bar.x, result.received[result.strongest], rtol=1e-6)
    assert bar.y[0] == "&lt;s&gt;"  # the strongest sink first, escaped: text, not markup
    assert "60%" in fig.layout.title.text


def test_the_sink_colour_bar_sits_between_the_heatmap_and_the_bars():
    """Not over the last heads' column (it was at x = 0.5, inside the heatmap's domain)."""
    fig = sinks.figure(found(), LABELS)
    bar = fig.data[0].colorbar
    assert bar.xanchor == "left"
    assert fig.layout.xaxis.domain[1] <= bar.x < fig.layout.xaxis2.domain[0] - 0.1


def test_the_sink_sentence_says_the_share_the_baseline_and_the_heads():
    text = sinks.sentence(found(), LABELS)
    assert "Across all 8 heads, 60% of the attention" in text
    assert "“<s>”" in text
    assert "In 8 of the 8 heads it gets more than half." in text
    assert f"{0.6 / found().uniform:.1f} times" in text


def test_the_sink_table_is_one_row_per_head():
    table = sinks.table(found(), LABELS)
    assert len(table) == 8
    assert list(table.columns) == ["layer", "head", "first_token", "weight_on_first"]
    np.testing.assert_allclose(table["weight_on_first"], 0.6)


@pytest.mark.parametrize(("kv_of", "n_kv"), [([0, 0, 1, 1], 2), ([0, 0, 0, 0], 1)])
def test_the_gqa_figure_joins_each_query_head_to_its_key_value_head(kv_of, n_kv):
    fig = gqa.figure(np.array(kv_of), selected=3)
    grey, red, queries, kvs = fig.data
    assert list(queries.text) == ["Q0", "Q1", "Q2", "Q3"]
    assert list(kvs.text) == [f"KV{j}" for j in range(n_kv)]
    group = [h for h, j in enumerate(kv_of) if j == kv_of[3]]
    assert len([x for x in red.x if x is None]) == len(group)  # a red line per head of 3's group
    assert len([x for x in grey.x if x is None]) == 4 - len(group)
    assert f"{n_kv} key/value head" in fig.layout.title.text
    assert list(gqa.table(np.array(kv_of))["kv_head"]) == kv_of


def test_the_picker_sentence_names_the_heads_sharing():
    assert gqa.sharing([0, 0, 1, 1], 2).startswith(
        "Head 2 reads key/value head 1, shared with head 3"
    )
    assert "shared with heads 0, 1, 3" in gqa.sharing([0, 0, 0, 0], 2)
    assert gqa.sharing([0, 1], 1) == "Head 1 has key/value head 1 to itself."


def test_the_rotary_figure_draws_both_curves_and_marks_the_texts_distance():
    rng = np.random.default_rng(1)
    scores = analysis.rotary_scores(
        rng.standard_normal(8), rng.standard_normal(8), np.arange(20), 0.35, halves=True
    )
    fig = rotary.figure(scores, "it", "restaurant", distance=5)
    rotated, plain, mark = fig.data
    np.testing.assert_allclose(rotated.y, scores.rotary, rtol=1e-6)
    np.testing.assert_allclose(plain.y, scores.plain, rtol=1e-6)
    assert (list(mark.x), mark.y[0]) == ([5], pytest.approx(scores.rotary[5], rel=1e-6))
    assert len(rotary.figure(scores, "it", "restaurant").data) == 2  # no distance: no mark
    table = rotary.table(scores)
    assert list(table.columns) == ["distance", "rotary", "no_rotary"]
    assert len(table) == 20
