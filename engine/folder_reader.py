"""The folder reader: a checkpoint in Hugging Face's layout, read into our config and arrays.

The folder holds ``config.json``, ``model.safetensors`` (or its shards and their index)
and ``tokenizer.json``. Weights are read with ``safetensors`` alone and the tokenizer with
``tokenizers``: nothing in the folder is ever executed or unpickled (no
``trust_remote_code``, no ``auto_map``, no ``pytorch_model.bin``). What the keys and
fields mean is the family tables' business (:mod:`engine.checkpoint`); this module only
finds and opens the files.
"""

from __future__ import annotations

import json
from pathlib import Path

from safetensors import safe_open

from engine.checkpoint import (
    MissingFileError,
    Model,
    PickleCheckpointError,
    UnsupportedModelError,
    read_params,
)
from engine.configs import read_config
from engine.tokenize import read_tokenizer

__all__ = ["read"]

#: A large model's weights in several files, listed by this index (transformers' layout).
_SHARD_INDEX = "model.safetensors.index.json"
#: What PyTorch, TensorFlow and Flax save besides safetensors: never opened here.
_OTHER_WEIGHTS = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.h5", "*.msgpack", "*.pkl")


def read(folder, progress=None):
    """The checkpoint in ``folder``: :func:`engine.checkpoint.load` for a folder.

    Raises
    ------
    a CheckpointError saying what the folder lacks or holds that this engine does not read
    """
    folder = Path(folder)
    _check_files(folder)
    config, family = read_config(folder / "config.json")
    params = read_params(_read_tensors(folder, progress), config, family)
    config = config._replace(precision=params["wte"].dtype.name)
    return Model(config, params, read_tokenizer(folder / "tokenizer.json"), folder)


def _check_files(folder):
    """Refuse a folder that lacks a file, or whose weights are only in a pickle."""
    if not folder.is_dir():
        raise MissingFileError(f"{folder} is not a folder")
    if not (folder / "config.json").is_file():
        raise MissingFileError(
            f"{folder} has no config.json: a model folder in Hugging Face's layout holds "
            "config.json, model.safetensors and tokenizer.json"
        )
    if not (folder / "model.safetensors").is_file() and not (folder / _SHARD_INDEX).is_file():
        others = sorted(path.name for glob in _OTHER_WEIGHTS for path in folder.glob(glob))
        if others:
            raise PickleCheckpointError(
                f"{folder} holds its weights in {', '.join(others)}, not model.safetensors. "
                "Only safetensors are read: a pickle can run any code when it is loaded, so "
                "it is never opened here. Convert it once, where you trust it, e.g. with "
                "transformers: AutoModel.from_pretrained(folder).save_pretrained(folder) "
                "writes model.safetensors"
            )
        raise MissingFileError(f"{folder} has no model.safetensors")
    if not (folder / "tokenizer.json").is_file():
        raise MissingFileError(
            f"{folder} has no tokenizer.json (the fast tokenizer's one file; vocab.txt or "
            "merges.txt alone are not read). Save it once with transformers: "
            "AutoTokenizer.from_pretrained(folder).save_pretrained(folder)"
        )


def _read_tensors(folder, progress=None):
    """Every stored tensor: of model.safetensors, or of the shards its index lists.

    ``progress``, when given, is called with the share of the tensors read so far, after
    each one.
    """
    files = [folder / "model.safetensors"]
    if not files[0].is_file():
        try:
            index = json.loads((folder / _SHARD_INDEX).read_text(encoding="utf-8"))
            names = sorted(set(index["weight_map"].values()))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise UnsupportedModelError(f"{_SHARD_INDEX} lists no weight_map: {error}") from error
        if not names or any(Path(name).name != name for name in names):  # files of the folder only
            raise UnsupportedModelError(f"{_SHARD_INDEX} lists no files of its folder: {names}")
        files = [folder / name for name in names]
    missing = [path.name for path in files if not path.is_file()]
    if missing:
        raise MissingFileError(f"{folder} has no {missing[0]}, listed in {_SHARD_INDEX}")
    keys = {path: _stored(path, lambda stored: list(stored.keys())) for path in files}
    total, tensors = sum(map(len, keys.values())), {}

    def read(stored, path):
        for key in keys[path]:
            tensors[key] = stored.get_tensor(key)
            if progress is not None:
                progress(len(tensors) / total)

    for path in files:
        _stored(path, lambda stored, path=path: read(stored, path))
    return tensors


def _stored(path, use):
    """``use(file)`` on a safetensors file opened for NumPy; a file it cannot read refused."""
    try:
        with safe_open(str(path), framework="np") as stored:
            return use(stored)
    except Exception as error:  # a corrupt file, or a dtype NumPy lacks (float8)
        raise UnsupportedModelError(f"{path.name} could not be read: {error}") from error
