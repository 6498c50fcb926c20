"""Ollama's models by name: a store laid out as Ollama lays it out, in a temporary folder."""

import json

import pytest

from engine import checkpoint, ollama

MODEL_LAYER = "application/vnd.ollama.image.model"


def pull(store, name, tag, content=b"GGUF-blob", host="registry.ollama.ai", namespace="library"):
    """Lay out one model as ``ollama pull`` does: its blob, and a manifest naming it."""
    digest = f"{abs(hash((name, tag))):064x}"[:64]
    blobs = store / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    (blobs / f"sha256-{digest}").write_bytes(content)
    (blobs / f"sha256-{'e' * 64}").write_bytes(b"{}")  # the config layer's blob
    manifest = store / "manifests" / host / namespace / name / tag
    manifest.parent.mkdir(parents=True, exist_ok=True)
    layers = [
        {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "f" * 64},
        {"mediaType": MODEL_LAYER, "digest": f"sha256:{digest}", "size": len(content)},
    ]
    manifest.write_text(
        json.dumps(
            {"schemaVersion": 2, "config": {"digest": "sha256:" + "e" * 64}, "layers": layers}
        )
    )
    return blobs / f"sha256-{digest}"


def test_a_name_finds_its_blob_through_the_manifest(tmp_path):
    blob = pull(tmp_path, "qwen3", "0.6b")
    pull(tmp_path, "qwen3", "latest", b"other")
    assert ollama.blob("ollama:qwen3:0.6b", tmp_path) == blob
    assert ollama.blob("ollama:qwen3", tmp_path).read_bytes() == b"other"  # tag latest


def test_namespaced_and_hosted_names(tmp_path):
    mine = pull(tmp_path, "tiny", "q8", namespace="someone")
    hosted = pull(tmp_path, "tiny", "q4", host="hf.co", namespace="someone")
    assert ollama.blob("ollama:someone/tiny:q8", tmp_path) == mine
    assert ollama.blob("ollama:hf.co/someone/tiny:q4", tmp_path) == hosted
    assert ollama.names(tmp_path) == ["hf.co/someone/tiny:q4", "someone/tiny:q8"]


def test_the_store_comes_from_ollama_models_else_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "models"))
    assert ollama.store() == tmp_path / "models"
    monkeypatch.delenv("OLLAMA_MODELS")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ollama.store() == tmp_path / ".ollama" / "models"


def test_a_missing_name_lists_what_the_store_has(tmp_path):
    pull(tmp_path, "qwen3", "0.6b")
    pull(tmp_path, "gemma3", "270m")
    with pytest.raises(checkpoint.MissingFileError) as refused:
        ollama.blob("ollama:llama3.2:1b", tmp_path)
    message = str(refused.value)
    assert "llama3.2:1b" in message
    assert "gemma3:270m, qwen3:0.6b" in message
    assert "ollama pull llama3.2:1b" in message


def test_an_empty_store_says_it_has_no_models(tmp_path):
    with pytest.raises(checkpoint.MissingFileError, match="has no models"):
        ollama.blob("ollama:qwen3", tmp_path)


@pytest.mark.parametrize(
    "name", ["ollama:", "ollama:../../etc:passwd", "ollama:a/b/c/d", "ollama:x:a/b"]
)
def test_malformed_names_are_refused(tmp_path, name):
    with pytest.raises(checkpoint.UnsupportedModelError, match="not an Ollama model name"):
        ollama.blob(name, tmp_path)


def test_a_manifest_without_a_model_layer_or_its_blob_is_refused(tmp_path):
    blob = pull(tmp_path, "qwen3", "0.6b")
    blob.unlink()
    with pytest.raises(checkpoint.MissingFileError, match="lacks the blob"):
        ollama.blob("ollama:qwen3:0.6b", tmp_path)
    manifest = tmp_path / "manifests" / "registry.ollama.ai" / "library" / "qwen3" / "0.6b"
    manifest.write_text(json.dumps({"layers": []}))
    with pytest.raises(checkpoint.UnsupportedModelError, match="names no model layer"):
        ollama.blob("ollama:qwen3:0.6b", tmp_path)


def test_load_reads_an_ollama_name_from_the_store(tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path))
    pull(tmp_path, "notgguf", "latest", b"\x00" * 64)
    with pytest.raises(checkpoint.UnsupportedModelError, match="is not a GGUF file"):
        checkpoint.load("ollama:notgguf")  # found through the store, then read as GGUF
