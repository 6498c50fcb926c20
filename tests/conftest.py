"""Shared fixtures for the browser tests: the real app on a local server, and headless Chromium.

The Streamlit server starts once per test session, as a subprocess on a free port, and
is stopped when the session ends. Chromium is Debian's package (``/usr/bin/chromium``),
driven by Playwright; Playwright's own browser download is never used. Without that
browser the browser tests are skipped, unless the environment variable ``CI`` is set:
on CI a missing browser is a broken set-up, so the tests fail loudly instead. The server
and the browser are started by ``benchmarks/harness.py``, as in the benchmarks.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from browser_support import unplugged_page
from harness import CHROMIUM, chromium, serve_app

ROOT = Path(__file__).resolve().parents[1]


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
def app_url(chromium_executable):
    """The base URL of the app, served by ``streamlit run app/main.py`` for the session."""
    # A failing test shows the traceback, not the redacted notice.
    with serve_app(ROOT / "app" / "main.py", "--client.showErrorDetails", "full") as (url, _):
        yield url


@pytest.fixture(scope="session")
def browser(chromium_executable):
    """One headless Chromium (the one ``chromium_executable`` checked) for the whole session."""
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser):
    """A fresh page in a context of its own: see :func:`browser_support.unplugged_page`."""
    with unplugged_page(browser) as new_page:
        yield new_page
