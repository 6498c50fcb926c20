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


#: Tests that must share one worker, by the start of their node ids: the browser tier (one
#: app server, one Chromium, in order), the README's commands in one fresh clone (its first
#: run.sh makes the .venv the others use), and two that serve the app themselves (the class
#: behind HAProxy, the memory benchmark): their own units, on another worker than the
#: browser tier's, which is the longest.
TOGETHER = {
    "tests/browser/test_memory.py": "memory",
    "tests/install/test_serve_class.py": "class_server",
    "tests/browser/": "browser",
    "tests/install/test_scripts.py": "readme_clone",
}
#: The order units start in: the browser tier at once, then the two that serve the app
#: themselves (minutes each, so they must not start last), then the rest.
FIRST = ("browser", "memory", "class_server")


def unit_of(nodeid):
    """The unit of work a test belongs to under pytest-xdist: its group, else itself."""
    return next((unit for start, unit in TOGETHER.items() if nodeid.startswith(start)), nodeid)


def pytest_xdist_make_scheduler(config, log):
    """Under pytest-xdist (``scripts/test.sh``), each unit of :func:`unit_of` on one worker.

    One worker drives Chromium through the browser tier, in order, from the start, while
    the others take the rest. Run in parallel, browser tests would share two cores with a
    second app server and a second Chromium. (pytest-xdist's own ``xdist_group`` mark does
    not group under pytest 9.2: pytest-dev/pytest-xdist#1386.)
    """
    from xdist.scheduler import LoadScopeScheduling

    class Units(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return unit_of(nodeid)

    return Units(config, log)


def pytest_collection_modifyitems(items):
    """The units of :data:`FIRST` first, in that order: under pytest-xdist they start at once."""

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
