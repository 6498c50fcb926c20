"""Which weights the core pages run: the packaged trained models, their sizes and defaults.

MiniLM (a 2019 encoder) and SmolLM2 (a 2024 decoder) are run by name; "random" is the
seeded toy model. A model's sizes are read once per process from its files, without its
weights (:func:`engine.configs.packaged_config`). Pure: no Streamlit here.
"""

from __future__ import annotations

import functools

from engine.configs import minilm_config, packaged_config
from engine.resources import MINILM_INSTALL_HINT, SMOLLM2_INSTALL_HINT, smollm2_file

#: The packaged trained models the core pages run, in the order the Weights box offers them.
TRAINED_LABELS = {
    "minilm": "MiniLM (trained encoder)",
    "smollm2": "SmolLM2 (trained decoder)",
}
WEIGHTS_LABELS = {**TRAINED_LABELS, "random": "Random (seeded)"}
#: How to install each packaged model.
INSTALL_HINTS = {"minilm": MINILM_INSTALL_HINT, "smollm2": SMOLLM2_INSTALL_HINT}
#: Each trained model's layer and head on opening: the head whose "it" finds "restaurant"
#: in the default passage, found with /pretrained's head finder (README, "Weights"):
#: MiniLM's weight 0.430; SmolLM2's is a decoder's, whose "it" sees only earlier tokens.
DEFAULT_HEADS = {"minilm": (3, 1), "smollm2": (22, 0)}
DEFAULT_LAYER, DEFAULT_HEAD = DEFAULT_HEADS["minilm"]
#: all-MiniLM-L6-v2's sizes, from its config.json; None when the package is not installed.
MINILM = minilm_config()
#: A function's ``config`` by default: MiniLM's as installed (None when it is not), read
#: when called, so that a test can take the package away.
INSTALLED = object()


def _minilm(config):
    return MINILM if config is INSTALLED else config


@functools.cache
def trained_config(name):
    """A packaged model's sizes (read once per process, without its weights), or None."""
    return MINILM if name == "minilm" else packaged_config(name)


def installed(name, config=INSTALLED):
    """Whether the packaged model ``name`` is installed (``config``: MiniLM's, or None)."""
    return _minilm(config) is not None if name == "minilm" else smollm2_file() is not None


def available_weights(config=INSTALLED):
    """The weights the core pages can run: the installed trained models first, then random."""
    return (*(name for name in TRAINED_LABELS if installed(name, config)), "random")


def model_config(values, config=INSTALLED):
    """The trained model's config the values select, or None for the random model."""
    weights = values["weights"]
    if weights == "minilm":
        return _minilm(config)
    return trained_config(weights) if weights in TRAINED_LABELS else None


def model_shape(values, config=INSTALLED):
    """(d_model, heads) of the layer the values select: a trained model's own, or the sliders'."""
    trained = model_config(values, config)
    if trained is not None:
        return trained.d_model, trained.n_heads
    return values["d_model"], values["heads"]


def n_layers(values, config=INSTALLED):
    """Layers of the model the values select: a trained model's, or the random one's 1."""
    trained = model_config(values, config)
    return 1 if trained is None else trained.n_layers


def default_head(weights):
    """(layer, head) the core pages open on for ``weights``: :data:`DEFAULT_HEADS`, or (0, 0)."""
    return DEFAULT_HEADS.get(weights, (0, 0))


def comparison_model(values):
    """The trained model a random-against-trained comparison shows, or None if none is installed.

    The chosen one when the weights are trained; with random weights, the first installed.
    """
    trained = [name for name in available_weights() if name != "random"]
    if values["weights"] in trained:
        return values["weights"]
    return trained[0] if trained else None


def short_name(weights):
    """A model's name in sentences: "MiniLM", "SmolLM2" or "Random"."""
    return WEIGHTS_LABELS[weights].split(" (")[0]


def max_layers(config):
    """The most layers any installed trained model has: the widest range a link may name."""
    return max(n_layers({"weights": name}, config) for name in available_weights(config))
