"""The tiny checkpoints in tests/data/tiny_models, and what transformers computed from them.

Made by ``scripts/make_tiny_checkpoints.py`` (the BERT family, GPT-2),
``scripts/make_tiny_decoders.py`` (Llama, Mistral, Qwen2) and ``scripts/make_tiny_families.py``
(Llama 3.x, Qwen3, Gemma 2 and 3, Phi-3); ``tests/data/tiny_models/README.md``.
"""

import json
import shutil
from pathlib import Path

import numpy as np

TINY = Path(__file__).resolve().parents[1] / "data" / "tiny_models"


def references(folders):
    """Each folder's reference outputs (its ``.npz``), arrays by name, by folder."""
    found = {}
    for name in folders:
        with np.load(TINY / f"{name}.npz") as data:
            found[name] = {key: data[key] for key in data.files}
    return found


def with_positions(name, folder, positions):
    """A copy of the tiny checkpoint ``name`` in ``folder`` that reads ``positions`` tokens.

    The tiny decoders have 128 positions; a long text's tests need a model that reads more,
    with the same weights (a rotary model has no position table to grow).
    """
    shutil.copytree(TINY / name, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"max_position_embeddings": positions}))
    return folder
