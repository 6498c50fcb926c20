"""The ``attention-explorer`` command (issue #13, item 11).

A plain ``pip install .`` that serves the app with it is ``tests/install/test_pip_install.py``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from apptest_support import open_app
from harness import free_port, wait_healthy

from app import cli

ROOT = Path(__file__).resolve().parents[2]
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


def test_the_server_starts_without_looking_up_an_external_address():
    """Issue 55: offline, ``streamlit run`` warned "Did not auto detect external IP" after
    asking a web service for this machine's address; with the project's settings it names
    the address the browser uses and asks nobody."""
    port = free_port()
    line = [sys.executable, "-m", "streamlit", "run", "benchmarks/trivial_app.py"]
    server = subprocess.Popen(
        [*line, "--server.port", str(port)],
        cwd=ROOT,  # where .streamlit/config.toml is read
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", server, 60, lambda: "")
    finally:
        server.terminate()
        printed = server.communicate(timeout=30)[0]
    assert f"URL: http://localhost:{port}" in printed
    assert "External URL" not in printed
    assert "Did not auto detect external IP" not in printed


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


TINY_GPT2 = ROOT / "tests" / "data" / "tiny_models" / "gpt2"


def test_command_passes_the_model_folder_as_an_absolute_path(monkeypatch):
    monkeypatch.chdir(TINY_GPT2.parent)
    line, env = cli.command(model="gpt2")
    assert env[cli.MODEL_VARIABLE] == str(TINY_GPT2)
    assert "gpt2" not in " ".join(line)  # the environment carries it, not streamlit's options
    monkeypatch.setenv(cli.MODEL_VARIABLE, "/somewhere/else")
    assert cli.MODEL_VARIABLE not in cli.command()[1]  # none asked for: none passed on


def test_a_model_that_is_not_a_folder_is_refused_before_the_server_starts(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--model", str(ROOT / "no-such-folder")])
    assert "no such folder or file" in capsys.readouterr().err


def test_a_gguf_file_or_a_models_name_passes_as_the_server_reads_it(monkeypatch, tmp_path):
    gguf = ROOT / "tests" / "data" / "tiny_gguf" / "llama-Q8_0.gguf"
    monkeypatch.chdir(gguf.parent)
    assert cli.command(model="llama-Q8_0.gguf")[1][cli.MODEL_VARIABLE] == str(gguf)
    for name in ("smollm2", "ollama:qwen3:0.6b"):  # names, never made paths
        assert cli.command(model=name)[1][cli.MODEL_VARIABLE] == name
    started = []
    monkeypatch.setattr(cli.os, "execve", lambda *args: started.append(args))
    cli.main(["--model", "smollm2"])
    cli.main(["--model", str(gguf)])
    assert [args[2][cli.MODEL_VARIABLE] for args in started] == ["smollm2", str(gguf)]


def test_app_opens_pretrained_on_the_command_lines_model(monkeypatch):
    monkeypatch.setenv(cli.MODEL_VARIABLE, str(TINY_GPT2))
    at = open_app("pretrained", timeout=120)
    assert not at.exception
    assert at.title[0].value == "A pretrained model: gpt2"
    assert at.query_params["model"] == "gpt2"  # a copied link names the folder, not its path


def test_an_ollama_name_the_store_lacks_is_refused_before_the_server_starts(
    monkeypatch, tmp_path, capsys
):
    """README's ``--model ollama:qwen2.5:0.5b`` on a machine whose Ollama has not pulled it:
    refused at the command line, as a missing path is, not a server that opens on MiniLM."""
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path))
    started = []
    monkeypatch.setattr(cli.os, "execve", lambda *args: started.append(args))
    with pytest.raises(SystemExit):
        cli.main(["--model", "ollama:qwen2.5:0.5b"])
    error = capsys.readouterr().err
    assert "--model ollama:qwen2.5:0.5b" in error
    assert "ollama pull qwen2.5:0.5b" in error
    assert started == []
    blob = tmp_path / "blobs" / f"sha256-{'a' * 64}"  # pulled: laid out as Ollama lays it out
    blob.parent.mkdir()
    blob.write_bytes(b"GGUF")
    manifest = tmp_path / "manifests" / "registry.ollama.ai" / "library" / "qwen2.5" / "0.5b"
    manifest.parent.mkdir(parents=True)
    layer = {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{'a' * 64}"}
    manifest.write_text(json.dumps({"layers": [layer]}))
    cli.main(["--model", "ollama:qwen2.5:0.5b"])
    assert started[0][2][cli.MODEL_VARIABLE] == "ollama:qwen2.5:0.5b"
