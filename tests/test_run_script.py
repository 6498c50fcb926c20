"""The README's run command on a stock Debian/Ubuntu system (issue #13, item 10).

``bash scripts/run.sh`` runs from a fresh ``git clone`` with a PATH that holds only the
system's ``python3`` (no ``python``) and a few basic tools, and no virtual environment
active: it must create ``.venv`` in the clone, say so, install the app there and serve
it; a second run reuses ``.venv``. Installing into the fresh ``.venv`` takes a minute or
two (the app's dependencies come from the package index pip is configured with). A system
whose ``python3 -m venv`` does not work gets the package to install, not a traceback.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness import free_port, healthy

ROOT = Path(__file__).resolve().parents[1]
#: What run.sh may call besides python3; everything else must come from .venv.
BASICS = ("bash", "env", "dirname", "rm")
INSTALL_AND_START = 600.0  # seconds: a fresh .venv installs every dependency


def system_python3():
    """Debian's /usr/bin/python3 when it is 3.11 or newer, else the interpreter running this."""
    stock = Path("/usr/bin/python3")
    if stock.exists():
        check = subprocess.run(
            [stock, "-c", "import sys, venv; sys.exit(sys.version_info < (3, 11))"],
            check=False,
        )
        if check.returncode == 0:
            return stock
    return Path(sys.executable)


def bare_path(folder, python3):
    """A folder for PATH holding ``python3`` and :data:`BASICS` only (no ``python``)."""
    folder.mkdir()
    (folder / "python3").symlink_to(python3)
    for tool in BASICS:
        (folder / tool).symlink_to(shutil.which(tool))
    return folder


def stock_env(path):
    """This environment without a virtual environment, PYTHONPATH, or a PATH to anything else."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX")
    }
    return env | {"PATH": str(path)}


def start(clone, env, log, port):
    return subprocess.Popen(
        ["bash", "scripts/run.sh", "--server.port", str(port), "--server.headless", "true"],
        cwd=clone,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # run.sh execs streamlit: stop the whole group
    )


def serve_until_healthy(clone, env, log_path):
    """Start run.sh, wait for the health check, stop it; returns what it printed."""
    port = free_port()
    with log_path.open("wb") as log:
        server = start(clone, env, log, port)
        try:
            deadline = time.monotonic() + INSTALL_AND_START
            while not healthy(f"http://localhost:{port}"):
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"run.sh did not serve the app:\n{log_path.read_text()[-4000:]}")
                time.sleep(0.5)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
    return log_path.read_text()


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs a git checkout to clone")
def test_run_sh_from_a_clean_clone_with_only_python3(tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    env = stock_env(bare_path(tmp_path / "bin", system_python3()))
    assert subprocess.run(["bash", "-c", "command -v python"], env=env, check=False).returncode
    try:
        check_fresh_then_reused(clone, env, tmp_path)
    finally:
        shutil.rmtree(clone / ".venv", ignore_errors=True)  # hundreds of MB; pytest keeps tmp


def check_fresh_then_reused(clone, env, tmp_path):
    printed = serve_until_healthy(clone, env, tmp_path / "first.log")
    assert "Creating a virtual environment in .venv" in printed
    assert "externally-managed" not in printed
    assert (clone / ".venv" / "bin" / "streamlit").exists()
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True, check=True
    )
    assert ".venv" not in status.stdout  # ignored, never committed by accident

    printed = serve_until_healthy(clone, env, tmp_path / "second.log")
    assert "Using the virtual environment in .venv" in printed
    assert "Creating" not in printed


def test_run_sh_says_what_to_install_without_venv(tmp_path):
    folder = tmp_path / "project"
    (folder / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "run.sh", folder / "scripts" / "run.sh")
    bin_dir = bare_path(tmp_path / "bin", system_python3())
    (bin_dir / "python3").unlink()
    real = system_python3()
    (bin_dir / "python3").write_text(  # Debian's python3 without the python3-venv package
        "#!/usr/bin/env bash\n"
        'if [[ "$1 $2" == "-m venv" ]]; then\n'
        '    echo "The virtual environment was not created successfully because ensurepip '
        'is not available." >&2\n'
        "    exit 1\n"
        "fi\n"
        f'exec {real} "$@"\n'
    )
    (bin_dir / "python3").chmod(0o755)
    result = subprocess.run(
        ["bash", "scripts/run.sh"],
        cwd=folder,
        env=stock_env(bin_dir),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "sudo apt install python3-venv" in result.stderr
    assert not (folder / ".venv").exists()
