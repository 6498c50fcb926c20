"""Ollama's models by name: ``ollama:NAME[:TAG]`` found in Ollama's own store on this disk.

Ollama keeps every model it has pulled as content-addressed blobs and a manifest per name
and tag (its ``server/modelpath.go`` and ``server/images.go``)::

    $OLLAMA_MODELS (else ~/.ollama/models)/
        manifests/registry.ollama.ai/library/NAME/TAG     JSON: {"layers": [...]}
        blobs/sha256-<hex>

The manifest's layer of media type ``application/vnd.ollama.image.model`` names the
model's GGUF file by its digest (``sha256:<hex>``), which lies in ``blobs/`` as
``sha256-<hex>``. A name with a namespace (``NAMESPACE/NAME``) or a host
(``HOST/NAMESPACE/NAME``) is found under those folders instead of ``library``. Nothing is
fetched: a name the store lacks is refused with the names it has.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from engine.checkpoint import MissingFileError, UnsupportedModelError

__all__ = ["PREFIX", "STORE_VARIABLE", "blob", "names", "store"]

#: What a model name starts with to be looked up in Ollama's store.
PREFIX = "ollama:"
#: Where Ollama keeps its models when not in ~/.ollama/models (Ollama's own variable).
STORE_VARIABLE = "OLLAMA_MODELS"
_HOST, _NAMESPACE, _TAG = "registry.ollama.ai", "library", "latest"
_MODEL_LAYER = "application/vnd.ollama.image.model"


def store():
    """Ollama's models folder: ``$OLLAMA_MODELS``, else ``~/.ollama/models``."""
    folder = os.environ.get(STORE_VARIABLE, "").strip()
    return Path(folder).expanduser() if folder else Path.home() / ".ollama" / "models"


def _parts(name):
    """``ollama:qwen3:0.6b`` -> (host, namespace, model, tag), Ollama's defaults filled in."""
    spec = name.removeprefix(PREFIX).strip()
    path, _, tag = spec.partition(":")
    pieces = [piece for piece in path.split("/") if piece]
    if not pieces or len(pieces) > 3 or any(p in (".", "..") for p in pieces) or "/" in tag:
        raise UnsupportedModelError(
            f"{name!r} is not an Ollama model name: write ollama:NAME or ollama:NAME:TAG "
            "(for example ollama:qwen3:0.6b), as `ollama list` shows them"
        )
    host, namespace = _HOST, _NAMESPACE
    if len(pieces) == 3:
        host, namespace = pieces[0], pieces[1]
    elif len(pieces) == 2:
        namespace = pieces[0]
    return host, namespace, pieces[-1], tag or _TAG


def names(folder=None):
    """Every model the store holds, as ``ollama list`` names them (``qwen3:0.6b``), sorted."""
    manifests = (store() if folder is None else Path(folder)) / "manifests"
    found = []
    for path in manifests.glob("*/*/*/*"):
        if path.is_file():
            host, namespace, model, tag = path.relative_to(manifests).parts
            prefix = (
                ""
                if (host, namespace) == (_HOST, _NAMESPACE)
                else (f"{namespace}/" if host == _HOST else f"{host}/{namespace}/")
            )
            found.append(f"{prefix}{model}:{tag}")
    return sorted(found)


def blob(name, folder=None):
    """The GGUF file of the Ollama model ``name`` (``ollama:NAME[:TAG]``).

    Parameters
    ----------
    name : str
    folder : str or Path, optional; Ollama's models folder, by default :func:`store`

    Returns
    -------
    Path of the model's blob

    Raises
    ------
    MissingFileError when the store lacks the name (the message lists what it has) or the
    blob its manifest names; UnsupportedModelError for a malformed name or manifest
    """
    root = store() if folder is None else Path(folder)
    host, namespace, model, tag = _parts(name)
    manifest = root / "manifests" / host / namespace / model / tag
    if not manifest.is_file():
        have = names(root)
        listing = ", ".join(have) if have else "no models"
        raise MissingFileError(
            f"Ollama's store ({root}) has no model {model}:{tag}; it has {listing}. "
            f"Pull it with `ollama pull {model}:{tag}`, or set {STORE_VARIABLE} to the "
            "folder Ollama keeps its models in"
        )
    try:
        layers = json.loads(manifest.read_text(encoding="utf-8"))["layers"]
        digest = next(layer["digest"] for layer in layers if layer["mediaType"] == _MODEL_LAYER)
    except (ValueError, KeyError, TypeError, StopIteration) as error:
        raise UnsupportedModelError(
            f"Ollama's manifest {manifest} names no model layer ({_MODEL_LAYER}): {error!r}"
        ) from error
    algorithm, _, hexdigest = str(digest).partition(":")
    if algorithm != "sha256" or not hexdigest.isalnum():
        raise UnsupportedModelError(f"Ollama's manifest {manifest} names a digest {digest!r}")
    path = root / "blobs" / f"sha256-{hexdigest}"
    if not path.is_file():
        raise MissingFileError(f"Ollama's store lacks the blob {path.name} that {name} names")
    return path
