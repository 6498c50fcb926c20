"""app.data.models: a checkpoint folder in the memory budget, and folder names for links."""

from pathlib import Path

import numpy as np

from app.data import cache, models
from engine import checkpoint

TINY = Path(__file__).resolve().parents[1] / "data" / "tiny_models"


def arrays(tree):
    if isinstance(tree, np.ndarray):
        return [tree]
    values = tree.values() if hasattr(tree, "values") else tree
    return [array for value in values for array in arrays(value)]


def test_a_loaded_model_counts_its_weights_against_the_budget():
    model = checkpoint.load(TINY / "gpt2")
    weights = sum(array.nbytes for array in arrays(model.params))
    assert weights > 100_000  # read-only mappings (MappingProxyType) are walked too
    assert cache.nbytes(model) >= weights


def test_a_refusal_is_returned_with_its_message(tmp_path):
    refused = models.load(tmp_path)
    assert isinstance(refused, checkpoint.MissingFileError)
    assert "config.json" in str(refused)


def test_a_link_names_a_folder_by_its_name_and_finds_only_what_the_server_loaded(monkeypatch):
    monkeypatch.delenv(models.MODEL_VARIABLE, raising=False)
    folder = str(TINY / "roberta")
    assert models.name_of(folder) == "roberta"
    assert models.name_of(None) is None
    assert models.path_of("no-such-model") is None
    models.remember(folder)
    assert models.path_of("roberta") == folder
    monkeypatch.setenv(models.MODEL_VARIABLE, str(TINY / "distilbert"))
    assert models.path_of("distilbert") == str(TINY / "distilbert")  # --model's, from the start
