"""Tests for engine.bert: parity with the reference BertModel, tokenization, properties.

The golden file ``tests/data/minilm_golden.npz`` holds what Hugging Face transformers'
``BertModel`` (PyTorch, eager attention) computed for three texts, with token ids from
transformers' pure-Python WordPiece; ``scripts/make_bert_golden.py`` wrote it. Every
other expectation here is a property (rows sum to 1, tokens cover the text, ...).
"""

import math
import os
import threading
from pathlib import Path

import numpy as np
import pytest

import engine.bert
from engine.attention import attention_loop, softmax
from engine.bert import (
    ModelUnavailableError,
    TooLongError,
    attention_rollout,
    erf,
    gelu,
    layer_run,
    layer_stages,
    load_minilm,
    permutation_error,
    rank_changes,
    rank_heads,
    run,
    run_ids,
)
from engine.resources import MINILM_INSTALL_HINT, minilm_dir

pytestmark = pytest.mark.skipif(
    minilm_dir() is None, reason=f"all-MiniLM-L6-v2 is not installed ({MINILM_INSTALL_HINT})"
)

GOLDEN = Path(__file__).parent / "data" / "minilm_golden.npz"
NAMES = ("accents", "restaurant", "long")
# The bound. Measured: attention 2.7e-6, last hidden state (entries reach about 6)
# 5.4e-6, on one thread and on two.
ATTENTION_ATOL = 1e-5
HIDDEN_ATOL = 1e-5


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.fixture(scope="module")
def golden():
    with np.load(GOLDEN) as data:
        return {key: data[key] for key in data.files}


@pytest.fixture(scope="module")
def runs(model, golden):
    return {name: run(model, str(golden[f"{name}/text"])) for name in NAMES}


def _arrays(tree):
    for value in tree.values():
        if isinstance(value, np.ndarray):
            yield value
        elif isinstance(value, tuple):
            for item in value:
                yield from _arrays(item)
        else:
            yield from _arrays(value)


# Parity with the reference implementation


@pytest.mark.parametrize("name", NAMES)
def test_attentions_match_reference(runs, golden, name):
    rows = golden[f"{name}/query_rows"]
    ours = runs[name].attentions[:, :, rows]
    reference = golden[f"{name}/attentions"]
    assert ours.shape == reference.shape
    np.testing.assert_allclose(ours, reference, rtol=0, atol=ATTENTION_ATOL)


@pytest.mark.parametrize("name", NAMES)
def test_last_hidden_state_matches_reference(runs, golden, name):
    reference = golden[f"{name}/last_hidden_state"]
    np.testing.assert_allclose(runs[name].hidden_states[-1], reference, rtol=0, atol=HIDDEN_ATOL)


def test_long_text_is_long(golden):
    assert len(golden["long/ids"]) >= 128


@pytest.mark.parametrize("name", NAMES)
def test_ids_match_reference_tokenizer(runs, golden, name):
    np.testing.assert_array_equal(runs[name].ids, golden[f"{name}/ids"])


@pytest.mark.parametrize("name", NAMES)
def test_run_ids_equals_run(model, runs, name):
    from_ids = run_ids(model, runs[name].ids)
    np.testing.assert_array_equal(from_ids.attentions, runs[name].attentions)
    assert from_ids.tokens == runs[name].tokens


def test_it_restaurant_head_matches_reference(runs, golden):
    tokens = runs["restaurant"].tokens
    it, restaurant = tokens.index("it"), tokens.index("restaurant")
    ours = rank_heads(runs["restaurant"].attentions, it, restaurant)
    reference = rank_heads(golden["restaurant/attentions"], it, restaurant)
    print(f"'it' -> 'restaurant': layer {ours[0].layer}, head {ours[0].head}, {ours[0].weight:.4f}")
    assert (ours[0].layer, ours[0].head) == (reference[0].layer, reference[0].head)
    assert ours[0].weight == pytest.approx(reference[0].weight, abs=ATTENTION_ATOL)


# Tokenization


def test_special_tokens_at_the_ends(runs):
    for result in runs.values():
        assert result.tokens[0] == "[CLS]"
        assert result.tokens[-1] == "[SEP]"
        assert "[CLS]" not in result.tokens[1:-1]
        assert "[SEP]" not in result.tokens[1:-1]


@pytest.mark.parametrize("text", ["Café", "CAFÉ", "cafe\u0301"])
def test_uncased_and_accents_stripped(model, text):
    assert run(model, text).tokens == ["[CLS]", "cafe", "[SEP]"]


def test_rare_word_splits_into_pieces(model):
    word = "antidisestablishmentarianism"
    pieces = run(model, word).tokens[1:-1]
    assert len(pieces) > 1
    assert not pieces[0].startswith("##")
    assert all(piece.startswith("##") for piece in pieces[1:])
    assert "".join(piece.removeprefix("##") for piece in pieces) == word


@pytest.mark.parametrize("text", ["Tokenization of Zürich", "  two   spaces, café!  "])
def test_labels_are_the_text_each_token_covers(model, text):
    result = run(model, text)
    assert result.labels[0] == "[CLS]"
    assert result.labels[-1] == "[SEP]"
    assert result.offsets[0] == result.offsets[-1] == (0, 0)
    starts = [start for start, _ in result.offsets[1:-1]]
    assert starts == sorted(starts)
    for label, (start, end) in zip(result.labels[1:-1], result.offsets[1:-1], strict=True):
        assert label
        assert label.removeprefix("##") == text[start:end]


def test_labels_keep_the_hashes_of_a_words_later_pieces(model):
    result = run(model, "Their ambiance was good.")
    assert result.labels == ["[CLS]", "Their", "am", "##bian", "##ce", "was", "good", ".", "[SEP]"]


def test_empty_text_runs_cls_and_sep(model):
    result = run(model, "")
    assert result.tokens == ["[CLS]", "[SEP]"]
    c = model.config
    assert result.attentions.shape == (c.n_layers, c.n_heads, 2, 2)
    np.testing.assert_allclose(result.attentions.sum(axis=-1), 1, atol=1e-6)


# The 512-position cap


def _text_of(model, n_tokens):
    word = "hello"
    assert len(model.tokenizer.encode(word, add_special_tokens=False).ids) == 1
    return " ".join([word] * n_tokens)


def test_longest_text_that_fits_runs(model):
    result = run(model, _text_of(model, 510))
    assert len(result.tokens) == 512
    assert result.attentions.shape == (6, 12, 512, 512)
    assert np.isfinite(result.hidden_states).all()


def test_one_token_too_many_raises_clear_error(model):
    with pytest.raises(TooLongError, match=r"513 tokens.*at most 512 \(510 plus") as caught:
        run(model, _text_of(model, 511))
    assert isinstance(caught.value, ValueError)
    assert (caught.value.n_tokens, caught.value.limit) == (513, 512)


def test_run_ids_caps_too(model):
    with pytest.raises(TooLongError):
        run_ids(model, [101] * 513)


@pytest.mark.parametrize("ids", [[], [-1], [30522]])
def test_run_ids_rejects_bad_ids(model, ids):
    with pytest.raises(ValueError, match="token"):
        run_ids(model, ids)


# Loading


def test_weights_are_read_only_float32_contiguous(model):
    arrays = list(_arrays(model.params))
    assert len(arrays) == 5 + 12 * model.config.n_layers
    for array in arrays:
        assert array.dtype == np.float32
        assert array.flags.c_contiguous
        assert not array.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        model.params["wte"][0, 0] = 1.0


def test_params_cannot_be_replaced(model):
    with pytest.raises(TypeError):
        model.params["wte"] = None


def test_qkv_is_fused(model):
    c = model.config
    for block in model.params["blocks"]:
        assert block["qkv"]["w"].shape == (c.d_model, 3 * c.d_model)


def test_missing_files_say_how_to_install(tmp_path):
    with pytest.raises(ModelUnavailableError, match=MINILM_INSTALL_HINT):
        load_minilm(tmp_path)


def test_load_from_explicit_path_matches_default(model):
    again = load_minilm(model.folder)
    np.testing.assert_array_equal(again.params["wpe"], model.params["wpe"])


# Properties of one forward pass


def test_shapes_and_dtypes(runs, model):
    c = model.config
    for result in runs.values():
        n = len(result.tokens)
        assert result.attentions.shape == (c.n_layers, c.n_heads, n, n)
        assert result.hidden_states.shape == (c.n_layers + 1, n, c.d_model)
        assert result.queries.shape == result.keys.shape == (c.n_layers, c.n_heads, n, c.d_head)
        for array in (result.attentions, result.hidden_states, result.queries, result.keys):
            assert array.dtype == np.float32


def test_attention_rows_sum_to_one(runs):
    for result in runs.values():
        assert (result.attentions >= 0).all()
        np.testing.assert_allclose(result.attentions.sum(axis=-1), 1, atol=1e-5)


def test_queries_and_keys_reproduce_attention(runs):
    for result in runs.values():
        d_head = result.queries.shape[-1]
        scores = result.queries @ result.keys.swapaxes(-1, -2) / math.sqrt(d_head)
        np.testing.assert_allclose(softmax(scores), result.attentions, atol=1e-6)


def test_erf_matches_math_erf():
    x = np.linspace(-6, 6, 200_001, dtype=np.float32)
    reference = np.array([math.erf(float(value)) for value in x])
    approx = erf(x)
    assert approx.dtype == np.float32
    assert np.abs(approx - reference).max() < 5e-7


def test_gelu_is_exact_erf_form_in_float32():
    x = np.linspace(-8, 8, 20_001, dtype=np.float32)
    reference = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.tolist()])
    y = gelu(x)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, reference, rtol=0, atol=2e-6)


# Rollout and the head finder


def test_rollout_rows_sum_to_one(runs):
    for result in runs.values():
        cumulative = attention_rollout(result.attentions, cumulative=True)
        assert cumulative.shape == result.attentions.shape[:1] + result.attentions.shape[2:]
        np.testing.assert_allclose(cumulative.sum(axis=-1), 1, atol=1e-5)
        np.testing.assert_array_equal(attention_rollout(result.attentions), cumulative[-1])


def test_rollout_multiplies_layer_by_layer(runs):
    attentions = runs["restaurant"].attentions.astype(np.float64)
    n = attentions.shape[-1]
    expected = np.eye(n)
    for layer in attentions:
        expected = 0.5 * (layer.mean(axis=0) + np.eye(n)) @ expected
    np.testing.assert_allclose(attention_rollout(attentions), expected, atol=1e-12)


def test_rank_heads_lists_every_head_once_descending(runs):
    result = runs["restaurant"]
    n_layers, n_heads = result.attentions.shape[:2]
    ranked = rank_heads(result.attentions, 3, 1)
    assert len(ranked) == n_layers * n_heads == 72
    assert {(h.layer, h.head) for h in ranked} == {
        (layer, head) for layer in range(n_layers) for head in range(n_heads)
    }
    weights = [h.weight for h in ranked]
    assert weights == sorted(weights, reverse=True)
    for h in ranked:
        assert h.weight == result.attentions[h.layer, h.head, 3, 1]


# One layer recomputed from its input: what the core pages draw


@pytest.mark.parametrize("layer", range(6))
def test_layer_run_gives_the_models_weights_for_every_head(model, runs, layer):
    result = runs["restaurant"]
    recomputed = layer_run(model, result, layer)
    np.testing.assert_allclose(recomputed.attention.weights, result.attentions[layer], atol=1e-6)
    np.testing.assert_allclose(recomputed.attention.q, result.queries[layer], atol=1e-5)
    np.testing.assert_allclose(recomputed.attention.k, result.keys[layer], atol=1e-5)
    assert recomputed.attention.heads.scale == pytest.approx(1 / math.sqrt(32))
    np.testing.assert_array_equal(recomputed.x, result.hidden_states[layer])  # the input


def test_default_passage_it_finds_restaurant_in_layer_3_head_1(model):
    from app.state import DEFAULT_TEXT

    result = run(model, DEFAULT_TEXT)
    weights = layer_run(model, result, 3).attention.weights[1]
    it = result.labels.index("it")
    assert result.labels[int(weights[it].argmax())] == "restaurant"
    assert weights[it].max() == pytest.approx(0.430, abs=5e-4)


def test_layer_run_weights_are_the_heads_projections_with_biases(model, runs):
    result = runs["accents"]
    recomputed = layer_run(model, result, 2)
    w = recomputed.weights
    x = result.hidden_states[2]
    head = slice(5 * 32, 6 * 32)
    q, k = x @ w.w_q[:, head] + w.b_q[head], x @ w.w_k[:, head] + w.b_k[head]
    v = x @ w.w_v[:, head] + w.b_v[head]
    loop_weights, loop_output = attention_loop(q.astype(np.float64), k, v)  # the oracle
    np.testing.assert_allclose(recomputed.attention.weights[5], loop_weights, atol=1e-5)
    np.testing.assert_allclose(recomputed.attention.heads.output[5], loop_output, atol=1e-4)
    assert w.w_q.shape == w.w_o.shape == (384, 384)


def test_layer_run_what_ifs_change_the_scale_and_mask(model, runs):
    result = runs["restaurant"]
    base = layer_run(model, result, 3)
    sharp = layer_run(model, result, 3, scale=1.0)
    np.testing.assert_allclose(sharp.attention.heads.scores, base.attention.heads.scores)
    assert sharp.attention.weights.max(axis=-1).mean() > base.attention.weights.max(axis=-1).mean()
    causal = layer_run(model, result, 3, causal=True).attention.weights
    n = causal.shape[-1]
    assert np.all(causal[:, np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] == 0)
    np.testing.assert_allclose(causal.sum(axis=-1), 1.0, atol=1e-5)


def test_layer_stages_end_in_the_next_hidden_state(model, runs):
    result = runs["restaurant"]
    for layer in range(6):
        stages = layer_stages(model, result, layer)
        np.testing.assert_allclose(stages.output, result.hidden_states[layer + 1], atol=1e-5)
        np.testing.assert_allclose(stages.streams[0], result.hidden_states[layer])
        assert stages.ffn_hidden.shape == (len(result.ids), 1536)


def test_without_positions_the_model_only_permutes(model, runs):
    ids = runs["restaurant"].ids
    permutation = np.random.default_rng(0).permutation(len(ids))
    assert permutation_error(model, ids, permutation, positions=False) < 1e-4
    assert permutation_error(model, ids, permutation) > 0.1


def test_rank_changes_puts_the_largest_absolute_change_first():
    rng = np.random.default_rng(3)
    grid_a, grid_b = rng.random((6, 12)), rng.random((6, 12))
    grid_b[4, 7] = grid_a[4, 7] + 0.99  # a head that moved a lot, downwards (A − B < 0)
    changes = rank_changes(grid_a, grid_b)
    assert len(changes) == 72
    assert (changes[0].layer, changes[0].head) == (4, 7)
    assert changes[0].change == pytest.approx(-0.99)
    magnitudes = [abs(c.change) for c in changes]
    assert magnitudes == sorted(magnitudes, reverse=True)
    for c in changes:
        assert c.change == grid_a[c.layer, c.head] - grid_b[c.layer, c.head]
        assert (c.weight_a, c.weight_b) == (grid_a[c.layer, c.head], grid_b[c.layer, c.head])


@pytest.mark.parametrize("parts", [1, 2, 4])
@pytest.mark.parametrize("name", NAMES)
def test_parts_on_threads_match_reference(model, golden, name, parts, monkeypatch):
    """Parts sum in another order than one pass does; the reference bound holds."""
    from engine import bert

    monkeypatch.setattr(bert, "parts_for", lambda n: parts)
    monkeypatch.setattr(bert, "spare_threads", lambda n: 2)
    threaded = run(model, str(golden[f"{name}/text"]))
    rows = golden[f"{name}/query_rows"]
    ours = threaded.attentions[:, :, rows]
    np.testing.assert_allclose(ours, golden[f"{name}/attentions"], rtol=0, atol=ATTENTION_ATOL)
    reference = golden[f"{name}/last_hidden_state"]
    np.testing.assert_allclose(threaded.hidden_states[-1], reference, rtol=0, atol=HIDDEN_ATOL)


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_threads_never_change_a_number(model, monkeypatch, threads):
    """The parts are fixed by the length alone, so the threads running them (which follow
    the machine's load) change the timing and not one bit of the result."""
    from engine import bert

    ids = [101, *([2023, 2003, 1037, 6251, 1012] * 60)[:198], 102]  # 200 tokens
    monkeypatch.setattr(bert, "parts_for", lambda n: 4)
    monkeypatch.setattr(bert, "spare_threads", lambda n: threads)
    threaded = run_ids(model, ids)
    monkeypatch.setattr(bert, "spare_threads", lambda n: 1)
    whole = run_ids(model, ids)
    for field in ("attentions", "hidden_states", "queries", "keys"):
        np.testing.assert_array_equal(getattr(threaded, field), getattr(whole, field))
    assert threaded.queries.shape == (6, 12, 200, 32)


def _cpus_of_each_thread(monkeypatch, model, threads):
    """Run a 200-token pass on ``threads`` threads; the CPUs each thread ran its parts on."""
    from engine import bert

    seen = {}
    in_parts = bert._in_parts

    def recording(work, parts, threads):
        def work_and_record(part):
            cpus = frozenset(os.sched_getaffinity(0))
            seen.setdefault(threading.current_thread().name, set()).add(cpus)
            work(part)

        in_parts(work_and_record, parts, threads)

    monkeypatch.setattr(bert, "_in_parts", recording)
    monkeypatch.setattr(bert, "spare_threads", lambda n: threads)
    run_ids(model, [101, *([2023, 2003, 1037, 6251, 1012] * 60)[:198], 102])
    return seen


needs_pinning = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or not engine.bert._pins(),
    reason="threads are pinned only where a pass may take every CPU (2-4 of them)",
)


@needs_pinning
def test_a_pass_keeps_each_thread_on_its_own_cpu(model, monkeypatch):
    """After a pause Linux may wake the pool's thread on the caller's core; pinned, the two
    never share one, and the caller gets its CPUs back after the pass."""
    from engine import bert

    before = os.sched_getaffinity(0)
    seen = _cpus_of_each_thread(monkeypatch, model, threads=2)
    caller = threading.current_thread().name
    assert seen.pop(caller) == {frozenset({bert._CPUS[0]})}
    assert seen, "the pool's thread ran no part"
    for cpus in seen.values():
        (only,) = cpus
        assert len(only) == 1
        assert bert._CPUS[0] not in only
    assert os.sched_getaffinity(0) == before


@needs_pinning
def test_only_one_pass_at_a_time_pins_its_caller(model, monkeypatch):
    """A second pass while one is pinned runs free: two callers on one CPU would take turns."""
    from engine import bert

    before = frozenset(os.sched_getaffinity(0))
    with bert._CALLER_PINNED:  # as if another session's pass held the first CPU
        seen = _cpus_of_each_thread(monkeypatch, model, threads=2)
    assert seen[threading.current_thread().name] == {before}
    seen = _cpus_of_each_thread(monkeypatch, model, threads=1)
    assert seen == {threading.current_thread().name: {before}}


@needs_pinning
def test_a_cpu_taken_from_the_process_never_stops_a_pass(model, monkeypatch):
    """If the CPUs cannot be set (a container took one away), the pass runs unpinned and
    the next pass may still pin its caller."""
    from engine import bert

    before = os.sched_getaffinity(0)
    real = os.sched_setaffinity
    calls = []

    def restore_fails(pid, cpus):
        calls.append(set(cpus))
        if len(calls) > 1:
            raise OSError(22, "Invalid argument")
        real(pid, cpus)

    monkeypatch.setattr(os, "sched_setaffinity", restore_fails)
    try:
        with bert._pinned(2):
            assert os.sched_getaffinity(0) == {bert._CPUS[0]}
    finally:
        real(0, before)
    assert calls == [{bert._CPUS[0]}, before]
    assert not bert._CALLER_PINNED.locked()

    def always_fails(pid, cpus):
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(os, "sched_setaffinity", always_fails)
    seen = _cpus_of_each_thread(monkeypatch, model, threads=2)
    assert seen[threading.current_thread().name] == {frozenset(before)}
    assert not bert._CALLER_PINNED.locked()


def test_parts_sum_to_the_one_part_layer(model, monkeypatch):
    """Four parts sum in another order than one: float32 rounding, nothing more."""
    from engine import bert

    ids = [101, *([2023, 2003, 1037, 6251, 1012] * 60)[:198], 102]  # 200 tokens
    monkeypatch.setattr(bert, "parts_for", lambda n: 4)
    split = run_ids(model, ids)
    monkeypatch.setattr(bert, "parts_for", lambda n: 1)
    whole = run_ids(model, ids)
    assert not np.array_equal(split.hidden_states, whole.hidden_states)  # really two orders
    np.testing.assert_allclose(split.attentions, whole.attentions, rtol=0, atol=ATTENTION_ATOL)
    # Through six layers the states move by float32 rounding, which grows with their size
    # (1e-5 at an entry of 1.86, at 200 tokens).
    for field in ("hidden_states", "queries", "keys"):
        ours, theirs = getattr(split, field), getattr(whole, field)
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("n", "load", "cores", "expected"),
    [
        (256, 0.2, 2, 2),  # idle: one thread per core
        (256, 1.4, 2, 2),  # the load of these passes themselves
        (256, 2.6, 2, 1),  # another job holds a core
        (256, 7.5, 2, 1),  # busy
        (256, 0.1, 8, 4),  # at most four
        (45, 0.0, 2, 2),  # every part keeps all 45 tokens
        (10, 0.0, 2, 1),  # too short to pay
    ],
)
def test_spare_threads_follow_the_idle_cores(monkeypatch, n, load, cores, expected):
    from engine import bert

    monkeypatch.setattr(bert.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(bert, "CORES", cores)
    monkeypatch.setattr(bert, "THREADS", min(4, cores))
    monkeypatch.setattr(bert, "PARTS", min(4, cores))
    assert bert.spare_threads(n) == expected
