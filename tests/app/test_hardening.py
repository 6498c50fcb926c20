"""The server's settings and the app's habits that keep a lecture hall safe.

XSRF protection on, usage statistics off, an upload limit and no tracebacks on screen
(``.streamlit/config.toml``); no user text can reach raw HTML (nothing in the app passes
``unsafe_allow_html``, and ``st.html`` only ever gets a constant of our own). That the
browser tests run with the network outside this machine unplugged is checked in
``tests/browser/test_network.py``.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*(ROOT / "app").rglob("*.py"), *(ROOT / "pages").glob("*.py")])


def test_server_config():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["enableXsrfProtection"] is True
    assert config["browser"]["gatherUsageStats"] is False
    assert 0 < config["server"]["maxUploadSize"] <= 10
    assert config["client"]["showErrorDetails"] == "none"


def test_the_sources_were_found():
    names = {path.name for path in SOURCES}
    assert {"main.py", "chart.py", "presentation.py", "attention.py"} <= names


def _raw_html_calls(tree):
    """``(line, why)`` for each call that could put text into the page as raw HTML.

    A call passing ``unsafe_allow_html`` (any value) counts; so does ``*.html(arg)``
    unless ``arg`` is a name bound, at the module's top level, to a string literal.
    """
    constants = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name) and isinstance(node.value.value, str)
    }
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if any(keyword.arg == "unsafe_allow_html" for keyword in node.keywords):
            found.append((node.lineno, "unsafe_allow_html"))
        if isinstance(node.func, ast.Attribute) and node.func.attr == "html":
            args = node.args
            if not (len(args) == 1 and isinstance(args[0], ast.Name) and args[0].id in constants):
                found.append((node.lineno, "html() of something not a module constant"))
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_no_user_text_can_reach_raw_html(path):
    assert _raw_html_calls(ast.parse(path.read_text())) == []


@pytest.mark.parametrize(
    "snippet",
    [
        "st.markdown(text, unsafe_allow_html=True)",
        "st.markdown('x', unsafe_allow_html=False)",
        "st.html(text)",
        "st.html(f'<b>{text}</b>')",
        "CSS = '<style>'\ndef f(CSS2):\n    st.html(CSS2)",
    ],
)
def test_the_raw_html_check_catches(snippet):
    assert _raw_html_calls(ast.parse(snippet))


def test_the_raw_html_check_allows_our_own_constant():
    assert _raw_html_calls(ast.parse("CSS = '<style></style>'\nst.html(CSS)")) == []
