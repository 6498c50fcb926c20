"""Chromium for the tiers that drive it: the browser tests and the class behind HAProxy.

Chromium is Debian's package (``/usr/bin/chromium``), driven by Playwright; Playwright's
own browser download is never used. Without that browser the tests that need it are
skipped, unless the environment variable ``CI`` is set: on CI a missing browser is a
broken set-up, so the tests fail loudly instead. The browser is started by
``tests/support/harness.py``, as in the benchmarks. The fixtures are lazy: the fast tier
(engine, app, pages) never starts a browser.
"""

from __future__ import annotations

import os

import pytest
from harness import CHROMIUM, chromium
from hypothesis import settings

# Speed is measured by the benchmarks, not asserted by tests: no example fails for its time
# (hypothesis's default deadline, 200 ms, is a coin toss on a shared, loaded machine).
settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")


#: Tests that must share one worker, by the start of their node ids (the first that matches):
#: the browser tier in two halves, each one app server and one Chromium, in order, on
#: workers of their own (the tier is the run's longest part; the halves as near equal as
#: measured, the memory benchmark with the second: docs/benchmarks.md); the README's
#: commands in one fresh clone (its first run.sh makes the .venv the others use); and two
#: that serve the app themselves (the class behind HAProxy, the memory benchmark).
TOGETHER = {
    "tests/browser/test_memory.py": "memory",
    "tests/install/test_serve_class.py": "class_server",
    "tests/browser/test_app.py": "browser_pages",
    "tests/browser/test_phone.py": "browser_pages",
    "tests/browser/test_hostile.py": "browser_pages",
    "tests/browser/test_first_use.py": "browser_pages",
    "tests/browser/": "browser",
    "tests/install/test_scripts.py": "readme_clone",
}
#: The order units are handed out in: the browser tier's larger half to the first worker,
#: the two that serve the app themselves and then the other half to the second, so that no
#: long unit starts last; then the rest, in the order collected.
FIRST = ("browser", "memory", "class_server", "browser_pages")


def unit_of(nodeid):
    """The unit of work a test belongs to under pytest-xdist: its group, else itself."""
    return next((unit for start, unit in TOGETHER.items() if nodeid.startswith(start)), nodeid)


def pytest_xdist_make_scheduler(config, log):
    """Under pytest-xdist (``scripts/test.sh``), each unit of :func:`unit_of` on one worker.

    The units go out in the order :func:`pytest_collection_modifyitems` gives them
    (pytest-xdist would otherwise hand out the units with the most tests first), each to
    the next worker with at most two tests left. Run test by test in parallel, browser
    tests would share two cores with more app servers and Chromiums than the cores can
    carry. (pytest-xdist's own ``xdist_group`` mark does not group under pytest 9.2:
    pytest-dev/pytest-xdist#1386.)
    """
    from xdist.scheduler import LoadScopeScheduling

    class Units(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return unit_of(nodeid)

    config.option.loadscopereorder = False
    return Units(config, log)


def pytest_collection_modifyitems(items):
    """The units of :data:`FIRST` first, in that order: under pytest-xdist they start first."""

    def rank(item):
        unit = unit_of(item.nodeid)
        return FIRST.index(unit) if unit in FIRST else len(FIRST)

    items.sort(key=rank)  # stable: each unit keeps its own order


def _unavailable(reason):
    """Skip, or fail on CI, where every browser test must run."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so the browser tests may not be skipped)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def chromium_executable():
    """The path of the system Chromium, after checking Playwright and the browser exist."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unavailable("the playwright package is not installed")
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is missing (apt-get install chromium)")
    return str(CHROMIUM)


@pytest.fixture(scope="session")
def browser(chromium_executable):
    """One headless Chromium (the one ``chromium_executable`` checked) for the whole session."""
    with chromium() as launched:
        yield launched
