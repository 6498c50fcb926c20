"""aeviews on a long text: one head's weights and every head's summaries, never every head.

A tiny Llama (grouped-query attention) stands in for SmolLM2 at 4,096 tokens: with
:data:`engine.bert.KEPT_WEIGHTS` at 0 its pass keeps no weights, as a long text's does,
and what the notebook reads must be what a pass that keeps them holds, to the bit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import aeviews as ae
from aeviews import models
from engine import bert, checkpoint, long_run, one_layer

LLAMA = Path(__file__).resolve().parents[1] / "data" / "tiny_models" / "llama"
TEXT = "The animal didn't cross the street because it was too tired, and then it slept."


def _clear():
    for cached in (models._run, models._layer_run, models._head_weights):
        cached.cache_clear()


@pytest.fixture
def long_pass(monkeypatch):
    """ae.attention as on a long text; and a pass of the same text that keeps every weight."""
    kept = bert.run(checkpoint.load(LLAMA), TEXT)
    _clear()
    monkeypatch.setattr(bert, "KEPT_WEIGHTS", 0)
    yield ae.attention(TEXT, model=LLAMA, layer=1, head=2), kept
    _clear()


def test_a_long_texts_head_and_summaries_are_the_passs(long_pass):
    att, kept = long_pass
    assert isinstance(att.run.attentions, long_run.Attentions)
    np.testing.assert_array_equal(att.weights, kept.attentions[1, 2])
    for ours, theirs in zip(att.summaries, kept.summaries, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert att._layer.attention.heads.weights is None  # no other head's n × n held
    layer = one_layer.layer_run(checkpoint.load(LLAMA), kept, 1)
    np.testing.assert_array_equal(att.scores, layer.attention.heads.scores[2])
    np.testing.assert_array_equal(att.scaled, layer.attention.heads.masked[2])
    np.testing.assert_array_equal(att.output, layer.attention.heads.output[2])
    np.testing.assert_array_equal(att.q, layer.attention.q[2])
    np.testing.assert_array_equal(att.k, layer.attention.k[2])
    np.testing.assert_array_equal(att.attentions, kept.attentions)  # it fits: computed
    assert "layer 1, head 2" in repr(att)


def test_every_heads_weights_that_would_not_fit_say_what_to_read(long_pass, monkeypatch):
    att, _ = long_pass
    monkeypatch.setattr(long_run, "WHOLE_WEIGHTS", 100)
    with pytest.raises(MemoryError, match=r"\.weights .*\.run\.attentions\[layer\].*\.summaries"):
        att.attentions  # noqa: B018
    assert att.weights.shape == att.run.attentions.shape[2:]


def test_a_long_texts_views_read_a_layer_at_a_time(long_pass):
    att, kept = long_pass
    lines = ae.line_view(att)
    expected = ae.line_view(TEXT, model=LLAMA, layer=1)  # the same: a layer read when drawn
    assert len(lines.layout.shapes) == len(expected.layout.shapes)
    neuron = ae.neuron_view(att, token=5)
    weights = next(trace for trace in neuron.data if trace.name == "weight")
    np.testing.assert_allclose(weights.x, kept.attentions[1, 2, 5, :6], atol=1e-6)


def test_a_4096_token_head_view_is_tiles_and_its_page_stays_under_10_mb(tmp_path):
    long_head = pytest.importorskip("app.views.long_head", reason="the long views' branch")
    from engine import tiling

    n = 4096
    rng = np.random.default_rng(0)
    weights = np.tril(rng.random((n, n), dtype=np.float32))
    weights /= weights.sum(axis=1, keepdims=True)  # rows of a causal head
    tokens = [f"t{i}" for i in range(n)]
    fig = ae.head_view([weights[None, None]], tokens)
    tiles = tiling.tile(weights, long_head.OVERVIEW_TILES, "max")
    np.testing.assert_array_equal(fig.data[0].z, tiles.values)
    assert "maximum" in fig.layout.title.text
    size = ae.save_html(fig, tmp_path / "head.html")
    assert size < 10 * 2**20
    means = ae.table([weights[None, None]], tokens, view="head", reduction="mean")
    np.testing.assert_allclose(means.to_numpy(), tiling.tile(weights, 256, "mean").values)
