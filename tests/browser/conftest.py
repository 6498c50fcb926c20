"""The browser tier's fixtures: the real app on a local server, and a fresh page.

The Streamlit server starts once per test session, as a subprocess on a free port, and
is stopped when the session ends; it and Chromium (``tests/conftest.py``) come from
``tests/support/harness.py``, as in the benchmarks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import unplugged_page
from harness import serve_app

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def app_server(chromium_executable):
    """``(url, pid)``: the app, served by ``streamlit run app/main.py`` for the session."""
    # A failing test shows the traceback, not the redacted notice.
    with serve_app(ROOT / "app" / "main.py", "--client.showErrorDetails", "full") as served:
        yield served


@pytest.fixture(scope="session")
def app_url(app_server):
    """The base URL of the session's app (:func:`app_server`)."""
    return app_server[0]


@pytest.fixture
def page(browser):
    """A fresh page in a context of its own: see :func:`browser_support.unplugged_page`."""
    with unplugged_page(browser) as new_page:
        yield new_page
