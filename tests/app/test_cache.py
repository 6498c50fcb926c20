"""The memory budget (app/data/cache.py): eviction by bytes in LRU order, threads, clearing."""

import itertools
import json
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import streamlit as st
from apptest_support import RANDOM, chart_z, context_warnings, open_app, outside_a_script_run
from hypothesis import given
from hypothesis.extra import numpy as hnp

from app.data import cache

MB = 1024 * 1024


@pytest.fixture
def budget_mb(monkeypatch):
    """Set the budget in MB for one test, on an empty store; empty it again afterwards."""
    cache.clear()
    yield lambda mb: monkeypatch.setenv(cache.BUDGET_VARIABLE, str(mb))
    cache.clear()


def _make(calls):
    @cache.bounded
    def block(i, mb=1):
        calls.append(i)
        return {"block": np.full(int(mb * MB) // 8, float(i)), "i": i}

    return block


def test_sizes_count_every_array_once():
    a = np.zeros(1000)
    value = (a, a, {"b": np.zeros(10, dtype=np.float32)}, "xy")
    assert cache.nbytes(value) == 8000 + 40 + 1 + 2  # the key "b" too
    assert cache.nbytes(cache.freeze((a[:10],))) == 80


def test_evicts_least_recent_once_over_budget(budget_mb):
    budget_mb(5.5)
    calls = []
    block = _make(calls)
    for i in range(5):
        block(i)
    assert cache.stats()["bytes"] <= cache.budget()
    block(0)  # a hit: 0 becomes the most recent
    assert calls == [0, 1, 2, 3, 4]
    block(5)  # 6 MB > 5.5 MB: the least recent, 1, goes
    assert cache.stats()["bytes"] <= cache.budget()
    block(0)
    assert calls == [0, 1, 2, 3, 4, 5]
    block(1)
    assert calls[-1] == 1  # recomputed
    assert cache.stats()["evictions"] >= 2


def test_budget_holds_with_entries_of_every_size(budget_mb):
    budget_mb(8)
    calls = []
    block = _make(calls)
    rng = np.random.default_rng(0)
    for i, mb in enumerate(rng.uniform(0.1, 4, 60)):
        block(i, float(mb))
        assert cache.stats()["bytes"] <= cache.budget()
    block(999, 20)  # larger than the whole budget: returned, not kept
    assert cache.stats()["bytes"] <= cache.budget()


def test_results_are_read_only(budget_mb):
    budget_mb(10)
    value = _make([])(1)
    with pytest.raises(ValueError, match="read-only"):
        value["block"][0] = 1.0


def test_threads_compute_a_key_once_and_stay_under_budget(budget_mb):
    budget_mb(6)
    runs, lock = [], threading.Lock()  # (key, start, end) of each computation

    @cache.bounded
    def slow(i):
        start = time.monotonic()
        time.sleep(0.05)
        with lock:
            runs.append((i, start, time.monotonic()))
        return np.zeros(MB // 8)

    errors = []

    def student(offset):
        try:
            for i in range(20):
                slow((i + offset) % 12)
                assert cache.stats()["bytes"] <= cache.budget()
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=student, args=(0,)) for _ in range(4)]
    threads += [threading.Thread(target=student, args=(6,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    # A key evicted may be computed again later, but never twice at the same time.
    for key in {key for key, _, _ in runs}:
        spans = sorted((start, end) for k, start, end in runs if k == key)
        assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans))


def test_streamlit_clear_clears_the_budget(budget_mb):
    budget_mb(10)
    calls = []
    block = _make(calls)
    block(1)
    st.cache_resource.clear()
    block(1)
    st.cache_data.clear()
    block(1)
    assert calls == [1, 1, 1]
    cache.clear()
    block(1)
    assert calls == [1, 1, 1, 1]


def test_budget_reads_its_variable(monkeypatch):
    monkeypatch.setattr(cache, "_ROOM", {})  # as in a server that loaded no large model yet
    monkeypatch.setenv(cache.BUDGET_VARIABLE, "12.5")
    assert cache.budget() == int(12.5 * MB)
    monkeypatch.setenv(cache.BUDGET_VARIABLE, "lots")
    assert cache.budget() == cache.DEFAULT_BUDGET_MB * MB
    monkeypatch.delenv(cache.BUDGET_VARIABLE)
    assert cache.budget() == cache.DEFAULT_BUDGET_MB * MB


def test_a_page_draws_the_same_after_its_entries_were_evicted(budget_mb):
    budget_mb(40)
    query = {**RANDOM, "d_model": "64", "heads": "4", "text": "The river bank was closed."}
    at = open_app("attention", query)
    assert not at.exception
    before = chart_z(at, "att_weights")
    filler = _make([])
    for i in range(8):
        filler(i, 6)  # 48 MB of other results: the page's entries are the least recent
    assert not any(key[0].startswith("app.data.") for key in cache._STORE._entries)
    at.run()
    assert not at.exception
    np.testing.assert_array_equal(chart_z(at, "att_weights"), before)


def test_the_command_passes_the_budget_on():
    from app import cli

    assert cli.CACHE_VARIABLE == cache.BUDGET_VARIABLE
    _, env = cli.command(cache_mb=120)
    assert env[cache.BUDGET_VARIABLE] == "120"


def test_a_miss_outside_a_script_run_logs_no_missing_context_warning(budget_mb):
    @cache.bounded(spinner="Computing …")
    def doubled(x):
        return np.full(3, 2.0 * x)

    with context_warnings() as warnings:
        np.testing.assert_array_equal(outside_a_script_run(lambda: doubled(1)), [2.0] * 3)
    assert warnings == []


@given(
    hnp.arrays(
        hnp.floating_dtypes(endianness="=") | hnp.integer_dtypes(endianness="="),
        hnp.array_shapes(max_dims=3, max_side=5),
    )
)
def test_a_digest_names_content(array):
    """Equal data give equal names; a changed element, shape or dtype gives another."""
    assert cache.digest(array) == cache.digest(array.copy())
    assert cache.digest((array, "x")) == cache.digest((array.copy(), "x"))
    changed = array.copy()
    flat = changed.reshape(-1)
    flat[0] = 1 if flat[0] != 1 else 2
    assert cache.digest(changed) != cache.digest(array)
    assert cache.digest(array.reshape(-1)) != cache.digest(array.reshape(-1, 1))
    assert cache.digest(array.view(np.uint8)) != cache.digest(array)


def test_a_digest_keeps_structure_apart():
    pairs = [
        (("ab", "c"), ("a", "bc")),
        ((1, 2), [1, 2]),
        ("1", 1),
        (1, 1.0),
        (b"a", "a"),
        ({"a": 1}, {"a": 2}),
        (np.float32(0.5), 0.5),
        (range(3), (0, 1, 2)),
        ((None,), ()),
    ]
    for one, other in pairs:
        assert cache.digest(one) != cache.digest(other), (one, other)
    assert cache.digest({"a": 1, "b": [2]}) == cache.digest({"b": [2], "a": 1})


def test_a_digest_refuses_what_it_cannot_see():
    for opaque in (object(), np.array(["a", None], dtype=object), {"f": len}):
        with pytest.raises(TypeError):
            cache.digest(opaque)


# In a process of its own: freezing would keep this test process's objects out of collection.
_FREEZE_RUNS = """
import gc
import json
from app.data import cache
counts = []
for _ in range(3):  # three script runs
    cache.freeze_long_lived()
    counts.append(gc.get_freeze_count())
garbage = []
garbage.append(garbage)  # a reference cycle made after the freeze
del garbage
print(json.dumps({"counts": counts, "collected": gc.collect(2)}))
"""


def test_the_second_run_freezes_what_the_process_holds_once():
    out = subprocess.run(
        [sys.executable, "-c", _FREEZE_RUNS], capture_output=True, text=True, check=True
    ).stdout.splitlines()[-1]
    found = json.loads(out)
    first, second, third = found["counts"]
    assert first == 0  # the first run freezes nothing: its garbage is not collected yet
    assert second > 10_000  # the second, the modules and everything alive
    assert third == second  # once
    assert found["collected"] >= 1  # cycles made since are still collected


def test_a_large_model_grows_the_default_budget_once_but_not_a_given_one(monkeypatch):
    """SmolLM2's results are kept by a default budget grown when it loads (once per name);
    a budget given with ``--cache-mb`` stays as given."""
    monkeypatch.setattr(cache, "_ROOM", {})
    monkeypatch.delenv(cache.BUDGET_VARIABLE, raising=False)
    cache.make_room("big", 100)
    cache.make_room("big", 100)
    assert cache.budget() == (cache.DEFAULT_BUDGET_MB + 100) * MB
    monkeypatch.setenv(cache.BUDGET_VARIABLE, "12.5")
    assert cache.budget() == int(12.5 * MB)
