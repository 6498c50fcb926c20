"""A plain ``pip install .`` runs the app (issue #13, item 11).

The project is built from a copy of this folder into a fresh virtual environment that
sees this interpreter's packages (``--system-site-packages``, so nothing is downloaded but
the build backend), then the app is served with the ``attention-explorer`` command from
an unrelated folder, and pages that read ``assets/`` are opened through AppTest. About a
minute.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from harness import free_port, stop, wait_healthy

ROOT = Path(__file__).resolve().parents[2]
TEXT = "The cat sat on the mat because it was tired."

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


@pytest.mark.install
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
            wait_healthy(f"http://localhost:{port}", server, 90, log.read_text)
        finally:
            stop(server, group=True)
