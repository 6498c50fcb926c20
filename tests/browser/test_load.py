"""A small lecture hall in the suite: 5 concurrent sessions for 15 s (3 interactions at least
each), zero errors, isolated.

The full benchmark (25 sessions, 60 s) is ``python3 benchmarks/load.py``.
"""

import pytest
from load import run_load

pytestmark = pytest.mark.browser


def test_five_sessions_stay_correct_and_apart(app_server):
    """On the browser tier's server (``conftest.py``): the sessions' own runs, measured."""
    url, pid = app_server
    # At least three interactions each, however long a busy machine takes over them (within
    # each one's timeout): a fixed 15 s left a session two on a machine at load 10.
    result = run_load(url, pid, n_sessions=5, seconds=15, think=1.0, ramp=0.5, actions=3)
    print(result.report())
    assert result.errors == []
    assert result.timeouts == []
    assert result.leaks == []
    assert all(session.saw_own for session in result.sessions)
    assert all(len(session.latencies) >= 3 for session in result.sessions)
    # Every interaction after the first load was heard answered by a run of its own.
    assert len(result.answered) == len(result.latencies)
    assert all(ms > 0 for ms in result.answered)
    assert result.peak_rss_mb > 0
    assert 0 < result.server.cpu_s <= result.server.busy_s
