"""The ``attention-explorer`` console command: start the app, optionally on a given text.

``attention-explorer`` runs ``streamlit run`` on the installed ``app/main.py`` with the
server settings of ``.streamlit/config.toml`` (which ``streamlit run`` reads only when
started in the project folder, so they are passed as options here);
``attention-explorer "some text"`` opens the app with that text instead of the
restaurant passage. The text reaches the app in the environment variable
:data:`TEXT_VARIABLE`, read once per session by the entry point.
``attention-explorer --model MODEL`` opens ``/pretrained`` on MODEL instead of MiniLM: a
checkpoint folder or a ``.gguf`` file (made an absolute path), the packaged ``smollm2``,
or an Ollama name (``ollama:qwen3:0.6b``); it reaches the app in :data:`MODEL_VARIABLE`.
``attention-explorer --threads N`` gives each of the engine's passes N threads instead of
one per CPU (a server that shares its CPUs with other programs), in :data:`THREADS_VARIABLE`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

MAIN = Path(__file__).resolve().parent / "main.py"
TEXT_VARIABLE = "ATTENTION_EXPLORER_TEXT"
#: The cache budget in MB, read by :mod:`app.data.cache` (not imported here: it loads Streamlit).
CACHE_VARIABLE = "ATTENTION_EXPLORER_CACHE_MB"
#: The model /pretrained opens on, read by :mod:`app.data.models` (not imported, as above).
MODEL_VARIABLE = "ATTENTION_EXPLORER_MODEL"
#: Models named rather than found by a path: the packaged ones, and Ollama's (``ollama:``).
NAMED_MODELS, OLLAMA_PREFIX = ("minilm", "smollm2"), "ollama:"
#: The engine's threads, read by :mod:`app.data.threads` (not imported here, as above).
THREADS_VARIABLE = "ATTENTION_EXPLORER_THREADS"

#: ``.streamlit/config.toml``'s settings (``tests/app/test_cli.py`` checks they agree), except
#: ``server.headless``: the command opens a browser when there is a display.
SERVER_OPTIONS = {
    "global.minCachedMessageSize": "256",
    "global.maxCachedMessageAge": "4",
    "browser.gatherUsageStats": "false",
    "browser.serverAddress": "localhost",
    "server.enableXsrfProtection": "true",
    "server.maxUploadSize": "10",
    "server.fileWatcherType": "none",
    "client.showErrorDetails": "none",
    "client.toolbarMode": "viewer",
}


def start_values():
    """The shared values the command line asked for: ``{"text": ...}`` or nothing."""
    from app.state.controls import MAX_TEXT_CHARS  # in the server only: the command stays light

    text = os.environ.get(TEXT_VARIABLE)
    return {"text": text[:MAX_TEXT_CHARS]} if text else {}


def command(text=None, port=None, options=SERVER_OPTIONS, cache_mb=None, model=None, threads=None):
    """The ``streamlit run`` command line and the environment for it.

    ``cache_mb`` sets the server's cache budget (:data:`app.data.cache.BUDGET_VARIABLE`);
    ``model`` the model /pretrained opens on (a path made absolute, a name as it is);
    ``threads`` the engine's threads per pass (:data:`app.data.threads.THREADS_VARIABLE`).
    """
    line = [sys.executable, "-m", "streamlit", "run", str(MAIN)]
    for name, value in options.items():
        line += [f"--{name}", value]
    if port is not None:
        line += ["--server.port", str(port)]
    env = dict(os.environ)
    env.pop(TEXT_VARIABLE, None)
    env.pop(MODEL_VARIABLE, None)
    env.pop(THREADS_VARIABLE, None)
    if model:
        env[MODEL_VARIABLE] = model if _named(model) else str(Path(model).expanduser().resolve())
    if text:
        env[TEXT_VARIABLE] = text
    if cache_mb is not None:
        env[CACHE_VARIABLE] = f"{cache_mb:g}"
    if threads is not None:
        env[THREADS_VARIABLE] = str(threads)
    return line, env


def _named(model):
    """Whether ``model`` is a name (``smollm2``, ``ollama:…``) rather than a path."""
    return model in NAMED_MODELS or model.startswith(OLLAMA_PREFIX)


def _check_ollama(parser, name):
    """Refuse an Ollama name its store lacks before the server starts, as a missing path is."""
    from engine import checkpoint, ollama  # here only: the command stays light without one

    try:
        ollama.blob(name)
    except (checkpoint.MissingFileError, checkpoint.UnsupportedModelError) as error:
        parser.error(f"--model {name}: {error}")


def main(argv=None):
    """Parse the arguments and replace this process with the Streamlit server."""
    parser = argparse.ArgumentParser(
        prog="attention-explorer",
        description="Start Attention Explorer, an interactive explainer of self-attention.",
    )
    parser.add_argument(
        "text", nargs="*", help="the text to open with (default: the restaurant passage)"
    )
    parser.add_argument("--port", type=int, help="the port to serve on (default 8501)")
    parser.add_argument(
        "--cache-mb",
        type=float,
        help="memory for cached results, in MB, shared by every visitor (default 300; "
        f"the environment variable {CACHE_VARIABLE})",
    )
    parser.add_argument(
        "--model",
        metavar="MODEL",
        help="the model /pretrained opens on (default: all-MiniLM-L6-v2): a checkpoint "
        "folder (config.json, model.safetensors, tokenizer.json) of a BERT-family, GPT-2, "
        "Llama, Mistral, Qwen2, Qwen3, Gemma 2 or 3, or Phi-3 model; a .gguf file (llama.cpp, "
        "LM Studio); smollm2, the packaged SmolLM2; or ollama:NAME[:TAG], a model Ollama has",
    )
    parser.add_argument(
        "--threads",
        type=int,
        help="threads for each forward pass of a model (default: one per CPU); on a "
        "server shared with other programs, fewer",
    )
    args = parser.parse_args(argv)
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads {args.threads}: at least 1")
    if args.model and not _named(args.model) and not Path(args.model).expanduser().exists():
        parser.error(f"--model {args.model}: no such folder or file")
    if args.model and args.model.startswith(OLLAMA_PREFIX):
        _check_ollama(parser, args.model)
    line, env = command(
        " ".join(args.text),
        args.port,
        cache_mb=args.cache_mb,
        model=args.model,
        threads=args.threads,
    )
    os.execve(line[0], line, env)
