"""The ``attention-explorer`` command and a plain ``pip install .`` (issue #13, item 11).

The install test builds the project from a copy of this folder into a fresh virtual
environment that sees this interpreter's packages (``--system-site-packages``, so nothing
is downloaded but the build backend), then serves the app with the console command from
an unrelated folder and opens pages that read ``assets/`` through AppTest. About a minute.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import pytest
from apptest_support import open_app
from harness import free_port, healthy

from app import cli

ROOT = Path(__file__).resolve().parents[1]
TEXT = "The cat sat on the mat because it was tired."


def test_command_has_the_servers_settings():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    flat = {
        f"{section}.{name}": str(value).lower() if isinstance(value, bool) else str(value)
        for section, values in config.items()
        for name, value in values.items()
    }
    flat.pop("server.headless")  # the command opens a browser when it can
    assert flat == cli.SERVER_OPTIONS


def test_command_passes_the_text():
    line, env = cli.command(TEXT, port=8600)
    assert line[1:5] == ["-m", "streamlit", "run", str(ROOT / "app" / "main.py")]
    assert line[-2:] == ["--server.port", "8600"]
    assert env[cli.TEXT_VARIABLE] == TEXT
    assert cli.TEXT_VARIABLE not in cli.command()[1]


def test_app_opens_on_the_command_lines_text(monkeypatch):
    monkeypatch.setenv(cli.TEXT_VARIABLE, TEXT)
    at = open_app("attention")
    assert not at.exception
    assert at.session_state["text"] == TEXT
    assert at.query_params["text"] == TEXT  # a copied link carries it


def test_dependencies_declare_every_import():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {requirement.split(">")[0].split("=")[0].lower() for requirement in declared}
    assert {"streamlit", "numpy", "plotly", "pandas", "tokenizers", "safetensors"} <= names
    assert "pillow" in names  # app/data/vision.py


def test_every_package_and_component_module_is_installed():
    """A plain ``pip install .`` ships what ``-e`` finds in the folder: every sub-package of
    app/ (setuptools installs only the packages it lists), and every ES module the chart
    components import by a relative path (only the package data it names)."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {f"app.{init.parent.name}" for init in (ROOT / "app").glob("*/__init__.py")}
    assert folders <= set(setuptools["packages"])
    assert "chart/*.js" in setuptools["package-data"]["attention_explorer"]
    chart = ROOT / "attention_explorer" / "chart"
    imported = set()
    for module in chart.glob("*.js"):
        imported |= set(re.findall(r'from "\./([\w.]+\.js)"', module.read_text()))
    assert imported
    assert all((chart / name).is_file() for name in imported), imported


CHECK_INSTALLED = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import app, engine
    from streamlit.testing.v1 import AppTest

    for package in (app, engine):
        assert Path(package.__file__).is_relative_to(sys.prefix), package.__file__
    at = AppTest.from_file(str(Path(app.__file__).parent / "main.py"), default_timeout=120)
    at.run()
    for page in ("vision", "decoder", "efficient"):
        at.switch_page(f"../pages/{page}.py").run()
        assert not at.exception, (page, at.exception)
        assert at.get("bidi_component"), page  # the charts, drawn by the app's component
    print("pages ran from", Path(app.__file__).parent.parent)
    import attention_explorer
    print("modules", *sorted(path.name for path in attention_explorer.ASSET_DIR.glob("*.js")))
    """
)


def test_plain_pip_install_runs_the_app(tmp_path):
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "__pycache__", "build", "*.egg-info", ".*_cache", ".hypothesis"
        ),
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "install", "--quiet", str(source)],
        check=True,
        env=env,
        cwd=tmp_path,
    )
    shutil.rmtree(source)  # the installed copy must stand on its own

    checked = subprocess.run(
        [venv / "bin" / "python", "-c", CHECK_INSTALLED],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr[-3000:]
    assert "site-packages" in checked.stdout
    shipped = set(checked.stdout.split("modules", 1)[1].split())
    assert {path.name for path in (ROOT / "attention_explorer" / "chart").glob("*.js")} <= shipped

    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [venv / "bin" / "attention-explorer", TEXT, "--port", str(port)],
            env=env | {"STREAMLIT_SERVER_HEADLESS": "true"},
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 90
            while not healthy(f"http://localhost:{port}"):
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"attention-explorer did not serve:\n{log.read_text()[-3000:]}")
                time.sleep(0.25)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=20)
