"""A small lecture hall in the suite: 5 concurrent sessions for 15 s, zero errors, isolated.

The full benchmark (25 sessions, 60 s) is ``python benchmarks/load.py``.
"""

from pathlib import Path

import pytest
from harness import serve_app
from load import run_load

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(chromium_executable):
    with serve_app(Path(__file__).resolve().parents[1] / "app" / "main.py") as (url, pid):
        yield url, pid


def test_five_sessions_stay_correct_and_apart(server):
    url, pid = server
    result = run_load(url, pid, n_sessions=5, seconds=15, think=1.0, ramp=0.5)
    print(result.report())
    assert result.errors == []
    # Interactions stuck past 120 s are reported, not failed: under load a front-end rerun
    # now and then never settles (issue #7 is open on it), and the suite must not flake.
    assert len(result.timeouts) <= 1
    assert result.leaks == []
    assert all(session.saw_own for session in result.sessions)
    assert all(len(session.latencies) >= 3 for session in result.sessions)
    assert result.peak_rss_mb > 0
