"""A layer's sums in fixed parts, the second on the engine's worker thread (engine.parts):
the same bits whoever computes a part, a part taken back when the worker has not started
it, and BLAS on one thread in the worker too."""

import threading
import time

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from engine import blas, parts
from engine.attention import multi_head_attention
from engine.layers import encoder_layer, feed_forward, gelu, toy_encoder_weights
from engine.parts import PARALLEL_MIN_TOKENS, in_parts, parts_for, share


def _blas_threads():
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


def _terms(n=64, parts_=2, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, 32)).astype(np.float32) for _ in range(parts_)]


@pytest.mark.parametrize("parts_", [1, 2, 3])
@pytest.mark.parametrize("parallel", [True, False])
def test_the_parts_are_summed_in_order(parts_, parallel):
    terms = _terms(parts_=parts_)
    total = in_parts(lambda part: terms[part].copy(), parts_, parallel)
    expected = terms[0].copy()
    for term in terms[1:]:
        expected += term
    assert np.array_equal(total, expected)


def test_the_split_depends_on_the_length_alone():
    assert parts_for(PARALLEL_MIN_TOKENS - 1) == 1
    assert parts_for(PARALLEL_MIN_TOKENS) == parts_for(512) == 2
    assert [share(12, 2, p) for p in range(2)] == [slice(0, 6), slice(6, 12)]
    assert [share(7, 3, p) for p in range(3)] == [slice(0, 2), slice(2, 4), slice(4, 7)]


def test_a_part_the_worker_has_not_started_is_computed_by_the_caller():
    """The worker is busy with another caller's part: the pass does not wait for it."""
    release = threading.Event()
    blocker = parts._pool().submit(release.wait, 30)
    ran_on = {}

    def work(part):
        ran_on[part] = threading.current_thread().name
        return np.full(3, float(part))

    start = time.perf_counter()
    try:
        total = in_parts(work, 2, parallel=True)
        elapsed = time.perf_counter() - start
    finally:
        release.set()
        blocker.result(timeout=30)
    assert elapsed < 5
    assert ran_on == {0: threading.current_thread().name, 1: threading.current_thread().name}
    assert np.array_equal(total, np.full(3, 1.0))


def test_a_part_the_worker_has_started_is_waited_for():
    worker_started = threading.Event()
    ran_on = {}

    def work(part):
        ran_on[part] = threading.current_thread().name
        if part == 0:
            assert worker_started.wait(30)  # the worker holds part 1 before the caller ends
        else:
            worker_started.set()
            time.sleep(0.05)
        return np.full(3, float(part))

    total = in_parts(work, 2, parallel=True)
    assert ran_on[1].startswith("engine-part")
    assert np.array_equal(total, np.full(3, 1.0))


def test_one_worker_thread_at_most_however_many_callers():
    x = np.random.default_rng(1).standard_normal((PARALLEL_MIN_TOKENS, 32))
    weights = toy_encoder_weights(32, 128, 0)
    callers = [
        threading.Thread(target=encoder_layer, args=(x,), kwargs={**weights, "n_heads": 4})
        for _ in range(4)
    ]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    workers = [t for t in threading.enumerate() if t.name.startswith("engine-part")]
    assert len(workers) == 1


def test_blas_keeps_one_thread_in_the_worker_until_both_parts_are_done():
    """OpenBLAS's thread count is one setting for the process, and the worker's part counts
    among engine.blas's callers: the caller's own part ending first must not give BLAS its
    threads back while the worker still computes; after both, the process has its own."""
    if not _blas_threads():
        pytest.skip("no BLAS library found by threadpoolctl")
    if {lib.get("threading_layer") for lib in threadpool_info()} != {"pthreads"}:
        pytest.skip("OpenBLAS built with OpenMP keeps a thread count per thread")
    worker_started = threading.Event()
    seen = {}

    @blas.one_thread
    def layer():
        def work(part):
            if part == 0:
                assert worker_started.wait(30)
                seen["caller"] = _blas_threads()
                return np.zeros(2)
            worker_started.set()
            time.sleep(0.05)  # the caller's part has ended meanwhile
            seen["worker, after the caller's part"] = _blas_threads()
            return np.ones(2)

        return in_parts(work, 2, parallel=True)

    with threadpool_limits(limits=3, user_api="blas"):
        layer()
        after = _blas_threads()
    assert seen == {"caller": {1}, "worker, after the caller's part": {1}}
    assert after == {3}


@pytest.mark.parametrize("n", [PARALLEL_MIN_TOKENS - 1, PARALLEL_MIN_TOKENS, 300])
def test_an_encoder_layer_has_the_same_bits_with_and_without_the_worker(n):
    x = np.random.default_rng(n).standard_normal((n, 64)).astype(np.float32)
    weights = toy_encoder_weights(64, 256, 2)
    threaded = encoder_layer(x, **weights, n_heads=4, activation=gelu)
    alone = encoder_layer(x, **weights, n_heads=4, activation=gelu, parallel=False)
    for a, b in zip(
        (threaded.y, threaded.h, threaded.ffn_hidden, *threaded.attention[:3]),
        (alone.y, alone.h, alone.ffn_hidden, *alone.attention[:3]),
        strict=True,
    ):
        assert np.array_equal(a, b)
    assert np.array_equal(threaded.attention.weights, alone.attention.weights)


def test_parts_split_the_heads_and_the_hidden_features_not_the_maths():
    """Two parts round differently from one, but compute the same function."""
    x = np.random.default_rng(5).standard_normal((40, 64))
    w = toy_encoder_weights(64, 256, 4)
    whole = multi_head_attention(x, **w["attn"], n_heads=4)
    halves = multi_head_attention(x, **w["attn"], n_heads=4, parts=2)
    for a, b in zip(whole[:3], halves[:3], strict=True):
        np.testing.assert_array_equal(a, b)  # per-head projections: the same columns
    np.testing.assert_allclose(halves.output, whole.output, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(halves.weights, whole.weights)
    np.testing.assert_array_equal(halves.concat, whole.concat)
    hidden, out = feed_forward(x, **w["ffn"], parts=1)
    hidden_2, out_2 = feed_forward(x, **w["ffn"], parts=2)
    np.testing.assert_array_equal(hidden, hidden_2)
    np.testing.assert_allclose(out_2, out, rtol=0, atol=1e-12)


@pytest.mark.parametrize("parallel", [True, False])
def test_the_parts_pieces_are_joined_in_place_whoever_computes_them(parallel):
    pieces = _terms(n=8, parts_=2, seed=3)
    joined = parts.Joined(2)

    def work(part):
        joined.put("whole", pieces[part], (8, 64), (slice(None), share(64, 2, part)))
        return np.zeros(1)

    in_parts(work, 2, parallel)
    assert np.array_equal(joined.arrays["whole"], np.concatenate(pieces, axis=1))
    alone = parts.Joined(1)
    alone.put("whole", pieces[0], (8, 32), slice(None))
    assert alone.arrays["whole"] is pieces[0]  # one part: the piece itself, no copy
