"""A long text's pass: the weights computed when read (engine.long_run.Attentions), to the bits
of a pass that keeps them, the summaries, the progress callback."""

from pathlib import Path

import numpy as np
import pytest
import tiny_models

from engine import attention, bert, blocked, checkpoint, generate, long_run, one_layer
from engine.attention import causal_mask, sliding_window_mask
from engine.summaries import head_summaries

TINY = Path(__file__).parents[1] / "data" / "tiny_models"
# GPT-2 (learned positions), Mistral (a sliding window), Gemma 3 (q/k norms, local
# layers, soft caps) and Llama (grouped-query attention)
FAMILIES = ["gpt2", "mistral", "gemma3", "llama"]


@pytest.fixture(scope="module", params=FAMILIES)
def runs(request):
    model = checkpoint.load(TINY / request.param)
    return _kept_and_lazy(model, min(model.config.max_tokens, 100))


def _kept_and_lazy(model, n):
    """The model over ``n`` tokens, the weights kept and computed when read (a long text's)."""
    ids = [(7 * i + 3) % model.config.n_vocab for i in range(n)]
    kept = bert.run_ids(model, ids)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bert, "KEPT_WEIGHTS", 0)
        lazy = bert.run_ids(model, ids)
    return model, kept, lazy


def test_a_long_pass_computes_the_weights_when_read(runs):
    model, kept, lazy = runs
    assert isinstance(kept.attentions, np.ndarray)
    assert isinstance(lazy.attentions, long_run.Attentions)
    whole = kept.attentions
    assert lazy.attentions.shape == whole.shape
    assert lazy.attentions.ndim == 4
    assert lazy.attentions.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(lazy.attentions), whole)
    for layer, head in [(0, 0), (whole.shape[0] - 1, whole.shape[1] - 1)]:
        np.testing.assert_array_equal(lazy.attentions[layer, head], whole[layer, head])
        np.testing.assert_array_equal(
            one_layer.head_weights(model, lazy, layer, head), whole[layer, head]
        )
    np.testing.assert_array_equal(lazy.attentions[1], whole[1])
    np.testing.assert_array_equal(lazy.last_token_attention, whole[:, :, -1])
    np.testing.assert_array_equal(lazy.attentions[:, :, 5, 2], whole[:, :, 5, 2])
    np.testing.assert_array_equal(lazy.attentions[-1, [0, 1], 3:9:2], whole[-1, [0, 1], 3:9:2])
    np.testing.assert_array_equal(lazy.attentions[..., 0], whole[..., 0])
    np.testing.assert_array_equal(lazy.hidden_states, kept.hidden_states)
    for name in ("queries", "keys"):
        ours, theirs = getattr(lazy, name), getattr(kept, name)
        assert isinstance(ours, long_run.PerLayer)
        assert ours.shape == theirs.shape
        np.testing.assert_array_equal(np.asarray(ours), theirs)
        np.testing.assert_array_equal(ours[1, 0, 3:7], theirs[1, 0, 3:7])


def test_the_summaries_are_the_weights(runs):
    _, kept, lazy = runs
    reference = head_summaries(kept.attentions)
    for ours, theirs, field in zip(lazy.summaries, reference, reference._fields, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5, err_msg=field)
    for ours, theirs in zip(lazy.summaries, kept.summaries, strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_too_big_a_whole_says_to_read_a_layer_or_a_head(runs, monkeypatch):
    _, _, lazy = runs
    monkeypatch.setattr(long_run, "WHOLE_WEIGHTS", 10)
    with pytest.raises(MemoryError, match=r"attentions\[layer, head\]"):
        np.asarray(lazy.attentions)
    assert lazy.attentions[0, 0].shape == lazy.attentions.shape[2:]


def test_bad_indices(runs):
    _, _, lazy = runs
    n_layers = lazy.attentions.shape[0]
    with pytest.raises(IndexError):
        lazy.attentions[n_layers]
    with pytest.raises(IndexError):
        lazy.attentions[0, 0, 0, 0, 0]


def test_progress_is_called_after_each_layer():
    model = checkpoint.load(TINY / "gpt2")
    calls = []
    bert.run(model, "A short text.", progress=lambda done, total: calls.append((done, total)))
    n = model.config.n_layers
    assert calls == [(i, n) for i in range(1, n + 1)]


@pytest.mark.parametrize("mask", ["causal", "window", "none"])
def test_rows_read_again_are_the_blocks_bits_beyond_one_block(mask):
    """Past blocked.WHOLE_ROWS queries a head is computed in blocks of rows; the rows read
    again (attention_rows, what Attentions computes) are those blocks' to the bit."""
    n = blocked.WHOLE_ROWS + 190  # two blocks and a part of one
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, n, 16)).astype(np.float32) for _ in range(3))
    masks = {"causal": causal_mask(n), "window": sliding_window_mask(n, 200), "none": None}
    kept = np.empty((2, n, n), dtype=np.float32)
    output = blocked.blocked_attention(q, k, v, masks[mask], None, 3.0, kept)
    queries = np.array([0, 127, 128, 300, n - 1, 5])
    rows = blocked.attention_rows(q, k, queries, masks[mask], None, 3.0)
    np.testing.assert_array_equal(rows, kept[:, queries])
    whole = attention.scaled_dot_product_attention(q, k, v, masks[mask], softcap=3.0)
    np.testing.assert_allclose(kept, whole.weights, atol=1e-6)
    np.testing.assert_allclose(output, whole.output, atol=1e-5)


@pytest.fixture(scope="module", params=["llama", "mistral", "gemma2"])
def long_runs(request, tmp_path_factory):
    """A tiny decoder made long (grouped keys and values; a sliding window; soft caps),
    past one block of query rows (blocked.WHOLE_ROWS) and split in parts."""
    folder = tmp_path_factory.mktemp("long") / request.param
    model = checkpoint.load(tiny_models.with_positions(request.param, folder, 1024))
    return _kept_and_lazy(model, blocked.WHOLE_ROWS + 190)


def test_a_row_read_is_the_heads_row_to_the_bit(long_runs):
    """Reading a few queries computes only their rows, with the bits of the head's whole
    weights (the pass's, and the head read whole)."""
    model, kept, lazy = long_runs
    assert isinstance(lazy.attentions, long_run.Attentions)
    n_layers, n_heads, n, _ = kept.attentions.shape
    for query in (0, 5, 127, 128, 300, n - 2):
        np.testing.assert_array_equal(
            lazy.attentions[:, :, query], kept.attentions[:, :, query], err_msg=str(query)
        )
    queries = [600, 3, 129, 600]  # across blocks, out of order, one twice
    for layer in range(n_layers):
        for head in range(n_heads):
            whole = one_layer.head_weights(model, lazy, layer, head)
            np.testing.assert_array_equal(lazy.attentions[layer, head, queries], whole[queries])
            np.testing.assert_array_equal(whole, kept.attentions[layer, head])
    np.testing.assert_array_equal(
        lazy.attentions[-1, ::2, [n - 1, 10]], kept.attentions[-1, ::2][:, [n - 1, 10]]
    )


@pytest.mark.parametrize("positions", [True, False])
def test_the_hidden_state_entering_a_layer_is_the_passs_to_the_bit(long_runs, positions):
    """A what-if's layer over a long text (the model without its positions) runs the layers
    below it alone, holding one hidden state: the pass's bits, with or without positions."""
    model, kept, _ = long_runs
    whole = bert.run_ids(model, kept.ids, positions=positions)
    for layer in range(model.config.n_layers + 1):
        np.testing.assert_array_equal(
            bert.hidden_state(model, kept.ids, layer, positions), whole.hidden_states[layer]
        )
    with pytest.raises(ValueError, match="layer must lie in"):
        bert.hidden_state(model, kept.ids, model.config.n_layers + 1)


def test_a_long_pass_caches_each_key_value_head_once_with_the_passs_bits(long_runs):
    """Generation's pass over a long text keeps each shared key/value head once as it goes
    (not every query head's keys, values and queries until the end): the same cache."""
    model, kept, _ = long_runs
    whole = bert.run_ids(model, kept.ids, cache=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bert, "KEPT_WEIGHTS", 0)
        lazy = bert.run_ids(model, kept.ids, cache=True)
    c = model.config
    group = c.n_heads // c.kv_heads
    np.testing.assert_array_equal(whole.cache.keys, np.asarray(kept.keys)[:, ::group])
    np.testing.assert_array_equal(lazy.cache.keys, whole.cache.keys)
    np.testing.assert_array_equal(lazy.cache.values, whole.cache.values)
    assert lazy.cache.keys.shape == (c.n_layers, c.kv_heads, len(kept.ids), c.d_head)


def test_a_runs_cache_made_from_its_hidden_states_is_the_passs(long_runs):
    """Generation continues a text the page has run (a long one's pass keeps no cache):
    its keys and values projected again are the cache a pass keeps, to the bit, and the
    tokens generated from either are the same, step for step."""
    model, kept, lazy = long_runs
    cached = bert.run_ids(model, kept.ids, cache=True).cache
    for run in (kept, lazy):
        made = bert.key_values(model, run)
        np.testing.assert_array_equal(made.keys, cached.keys)
        np.testing.assert_array_equal(made.values, cached.values)
    with_cache = bert.run_ids(model, kept.ids, cache=True)
    again = generate.generate(model, "", 3, prompt=with_cache)  # the pass's own cache
    continued = generate.generate(model, "", 3, prompt=lazy)  # the one made again
    assert [s.id for s in again] == [s.id for s in continued]
    for a, b in zip(again, continued, strict=True):
        np.testing.assert_array_equal(a.attention, b.attention)
    with pytest.raises(ValueError, match="without its positions"):
        bert.key_values(model, bert.run_ids(model, kept.ids[:20], positions=False))
