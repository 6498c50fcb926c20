"""A layer's sums in a fixed number of parts, on as many threads as asked (engine.parts):
the same bits whoever computes a part and however many threads there are, parts a busy
worker has not started computed by the caller, and BLAS on one thread in the workers too."""

import os
import threading
import time

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from engine import blas, parts
from engine.attention import multi_head_attention
from engine.layers import encoder_layer, feed_forward, gelu, toy_encoder_weights
from engine.parts import PARALLEL_MIN_TOKENS, PARTS, in_parts, parts_for, share, threads_for

THREADS = [False, 1, 2, 3, 4, True]  # every way to ask: the caller alone, N threads, the CPUs


def _blas_threads():
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


def _terms(n=64, parts_=2, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, 32)).astype(np.float32) for _ in range(parts_)]


def _busy_workers():
    """Hold every worker thread the pool has; returns the event that lets them go."""
    release = threading.Event()
    tickets = parts._tickets(1)
    for _ in range(parts._pool["workers"]):
        tickets.put(parts._Job(lambda part: release.wait(30), 1))
    time.sleep(0.05)  # each worker takes its blocker
    return release


@pytest.mark.parametrize("parts_", [1, 2, 3, 8])
@pytest.mark.parametrize("parallel", THREADS)
def test_the_parts_are_summed_in_order(parts_, parallel):
    terms = _terms(parts_=parts_)
    total = in_parts(lambda part: terms[part].copy(), parts_, parallel)
    expected = terms[0].copy()
    for term in terms[1:]:
        expected += term
    assert np.array_equal(total, expected)


def test_the_split_depends_on_the_length_alone():
    assert parts_for(PARALLEL_MIN_TOKENS - 1) == 1
    assert parts_for(PARALLEL_MIN_TOKENS) == parts_for(512) == PARTS > 1
    counts = [parts_for(n) for n in range(1, 600)]
    assert counts == sorted(counts)  # never fewer parts for more tokens
    assert [share(12, 2, p) for p in range(2)] == [slice(0, 6), slice(6, 12)]
    assert [share(7, 3, p) for p in range(3)] == [slice(0, 2), slice(2, 4), slice(4, 7)]


def test_the_threads_are_the_ones_asked_for_and_never_more_than_the_parts():
    assert parts.cpus() == len(os.sched_getaffinity(0))
    assert threads_for(True, 64) == parts.cpus()
    assert threads_for(False, 8) == threads_for(1, 8) == threads_for(np.False_, 8) == 1
    assert threads_for(np.True_, 64) == parts.cpus()
    assert threads_for(3, 8) == 3  # an explicit count may exceed the CPUs
    assert threads_for(16, 8) == threads_for(True, 1) + 7 == 8
    with pytest.raises(ValueError, match="thread count"):
        threads_for(0, 8)


def test_parts_no_worker_has_started_are_computed_by_the_caller():
    """Every worker is busy with another caller's part: the pass does not wait for them."""
    in_parts(lambda part: np.zeros(1), 2, parallel=2)  # at least one worker exists
    release = _busy_workers()
    ran_on = {}

    def work(part):
        ran_on[part] = threading.current_thread().name
        return np.full(3, float(part))

    start = time.perf_counter()
    try:
        total = in_parts(work, 3, parallel=2)
        elapsed = time.perf_counter() - start
    finally:
        release.set()
    assert elapsed < 5
    assert set(ran_on.values()) == {threading.current_thread().name}
    assert np.array_equal(total, np.full(3, 3.0))


def test_a_part_a_worker_has_started_is_waited_for():
    worker_started = threading.Event()
    ran_on = {}

    def work(part):
        ran_on[part] = threading.current_thread().name
        if part == 0:
            assert worker_started.wait(30)  # a worker holds part 1 before the caller ends
        else:
            worker_started.set()
            time.sleep(0.05)
        return np.full(3, float(part))

    total = in_parts(work, 2, parallel=2)
    assert ran_on[0] == threading.current_thread().name
    assert ran_on[1].startswith("engine-part")
    assert np.array_equal(total, np.full(3, 1.0))


def test_every_thread_asked_for_takes_parts():
    """Four threads, eight parts that each wait until four are under way at once."""
    under_way, lock, ran_on = [0], threading.Lock(), {}
    all_in = threading.Event()

    def work(part):
        ran_on[part] = threading.current_thread().name
        with lock:
            under_way[0] += 1
            if under_way[0] == 4:
                all_in.set()
        assert all_in.wait(30)
        return np.ones(2)

    assert np.array_equal(in_parts(work, 8, parallel=4), np.full(2, 8.0))
    assert len(set(ran_on.values())) == 4


def test_an_error_in_a_part_reaches_the_caller_and_the_pool_still_works():
    def work(part):
        if part == 2:
            raise RuntimeError("part 2")
        return np.ones(2)

    for parallel in (False, 2, 4):
        with pytest.raises(RuntimeError, match="part 2"):
            in_parts(work, 4, parallel)
    assert np.array_equal(in_parts(lambda part: np.ones(2), 4, parallel=4), np.full(2, 4.0))


def test_many_callers_share_the_workers():
    x = np.random.default_rng(1).standard_normal((128, 32))
    weights = toy_encoder_weights(32, 128, 0)
    alone = encoder_layer(x, **weights, n_heads=4, parallel=False)
    found = []
    callers = [
        threading.Thread(
            target=lambda: found.append(encoder_layer(x, **weights, n_heads=4, parallel=2).y)
        )
        for _ in range(4)
    ]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert len(found) == 4
    assert all(np.array_equal(y, alone.y) for y in found)
    workers = [t for t in threading.enumerate() if t.name.startswith("engine-part")]
    assert len(workers) == parts._pool["workers"]  # one pool, not one per caller


def test_blas_keeps_one_thread_in_the_workers_until_every_part_is_done():
    """OpenBLAS's thread count is one setting for the process, and a worker's parts count
    among engine.blas's callers: the caller's own part ending first must not give BLAS its
    threads back while a worker still computes; after all, the process has its own."""
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

        return in_parts(work, 2, parallel=2)

    with threadpool_limits(limits=3, user_api="blas"):
        layer()
        after = _blas_threads()
    assert seen == {"caller": {1}, "worker, after the caller's part": {1}}
    assert after == {3}


@pytest.mark.parametrize("n", [PARALLEL_MIN_TOKENS - 1, PARALLEL_MIN_TOKENS, 128, 300])
def test_an_encoder_layer_has_the_same_bits_on_any_number_of_threads(n):
    x = np.random.default_rng(n).standard_normal((n, 64)).astype(np.float32)
    weights = toy_encoder_weights(64, 256, 2)
    alone = encoder_layer(x, **weights, n_heads=4, activation=gelu, parallel=False)
    for parallel in THREADS[1:]:
        found = encoder_layer(x, **weights, n_heads=4, activation=gelu, parallel=parallel)
        for a, b in zip(
            (found.y, found.h, found.ffn_hidden, *found.attention[:3]),
            (alone.y, alone.h, alone.ffn_hidden, *alone.attention[:3]),
            strict=True,
        ):
            assert np.array_equal(a, b), parallel
        assert np.array_equal(found.attention.weights, alone.attention.weights)


@pytest.mark.parametrize("count", [2, 4, 8])
def test_parts_split_the_heads_and_the_hidden_features_not_the_maths(count):
    """More parts round differently from one, but compute the same function."""
    x = np.random.default_rng(5).standard_normal((40, 64))
    w = toy_encoder_weights(64, 256, 4)
    whole = multi_head_attention(x, **w["attn"], n_heads=8)
    split = multi_head_attention(x, **w["attn"], n_heads=8, parts=count)
    for a, b in zip(whole[:3], split[:3], strict=True):
        np.testing.assert_array_equal(a, b)  # per-head projections: the same columns
    np.testing.assert_allclose(split.output, whole.output, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(split.weights, whole.weights)
    np.testing.assert_array_equal(split.concat, whole.concat)
    hidden, out = feed_forward(x, **w["ffn"], parts=1)
    hidden_split, out_split = feed_forward(x, **w["ffn"], parts=count)
    np.testing.assert_array_equal(hidden, hidden_split)
    np.testing.assert_allclose(out_split, out, rtol=0, atol=1e-12)


@pytest.mark.parametrize("parallel", [False, 2])
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
