"""Cached access to the model /pretrained shows: MiniLM by default, or a checkpoint folder.

A folder is loaded by :func:`engine.checkpoint.load` (safetensors only, nothing in it
executed) and kept, like every run on it, in the server's one memory budget
(:mod:`app.data.cache`); a model larger than the whole budget is refused, saying what
budget to start the server with. A refusal is returned, not raised: the page shows its
message.
``folder=None`` stands for MiniLM throughout, whose functions :mod:`app.data.minilm` keeps.

A link names a model by its folder's name, never its path: the server remembers which
path each name it has loaded stands for (:func:`remember`, :func:`path_of`), starting
with the folder given to ``attention-explorer --model`` (:data:`MODEL_VARIABLE`).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from app.data import cache, minilm, threads
from engine import analysis, bert, checkpoint, generate

__all__ = [
    "FOLDER_BOX_VARIABLE",
    "MODEL_VARIABLE",
    "TEMPERATURES",
    "generation",
    "head_grid",
    "load",
    "model",
    "name_of",
    "path_of",
    "ranked_heads",
    "remember",
    "rollout",
    "run",
    "start_folder",
    "sweep",
    "typed_folders",
]

#: The folder ``attention-explorer --model PATH`` opens /pretrained on (set by :mod:`app.cli`).
MODEL_VARIABLE = "ATTENTION_EXPLORER_MODEL"
#: Set to ``off`` (``scripts/serve_class.sh`` does), the page reads no folder typed in its
#: box: on a shared server a student could otherwise open, or probe through the refusals,
#: any folder the server's user can read.
FOLDER_BOX_VARIABLE = "ATTENTION_EXPLORER_FOLDER_BOX"
#: The temperature slider's stops: 0 (greedy) and quarter-octaves from 1/16 to 16, 1 among them.
TEMPERATURES = (0.0, *(float(2.0 ** (i / 4)) for i in range(-16, 17)))
#: Next tokens drawn, likeliest first.
TOP_K = 10


def start_folder():
    """The folder the server was started with (``--model``), or None for MiniLM."""
    folder = os.environ.get(MODEL_VARIABLE, "").strip()
    return str(Path(folder).expanduser().resolve()) if folder else None


def typed_folders():
    """Whether the page's path box reads folders (not on a class server)."""
    return os.environ.get(FOLDER_BOX_VARIABLE, "on").strip().lower() != "off"


def name_of(folder):
    """What a link says for ``folder``: the folder's own name (``None`` for MiniLM)."""
    return None if folder is None else Path(folder).name


@st.cache_resource(show_spinner=False)
def _known():
    """Folder name -> path, for every folder this server has loaded: shared by every session."""
    return {}, threading.Lock()


def remember(folder):
    """Let links that name ``folder``'s name open it on this server."""
    known, lock = _known()
    with lock:
        known[name_of(folder)] = folder


def path_of(name):
    """The path of the folder a link names, or None when this server has not loaded it."""
    start = start_folder()
    if start is not None and name_of(start) == name:
        return start
    known, lock = _known()
    with lock:
        return known.get(name)


def load(folder):
    """The checkpoint in ``folder`` (an absolute path), or the CheckpointError saying why not."""
    return _load(str(folder))


@cache.bounded(spinner="Loading the model …")
def _load(folder):
    bar, text = _progress_bar(folder), f"Reading {Path(folder).name}'s weights …"
    try:
        progress = None if bar is None else lambda share: bar.progress(share, text=text)
        loaded = checkpoint.load(folder, progress=progress)
    except checkpoint.CheckpointError as error:
        return error
    except OSError as error:  # unreadable files: said as a refusal too
        return checkpoint.CheckpointError(f"{folder} could not be read: {error}")
    finally:
        if bar is not None:
            bar.empty()
    size, budget = cache.nbytes(loaded), cache.budget()
    if size > budget:  # never kept, so read again on every call: refused instead
        return checkpoint.CheckpointError(
            f"{folder} holds {size / 2**20:,.0f} MB of weights, more than this server's "
            f"cache budget of {budget / 2**20:,.0f} MB, which holds every model and result. "
            f"Start the server with attention-explorer --cache-mb {2 * size / 2**20:.0f} "
            "to read it."
        )
    return loaded


def _progress_bar(folder):
    """A bar for the tensors read, in a script run (not in a server thread), else None."""
    if get_script_run_ctx(suppress_warning=True) is None:
        return None
    return st.progress(0.0)


def model(folder=None):
    """MiniLM (``folder`` None) or the folder's model; or the error saying why not."""
    return minilm.model() if folder is None else load(folder)


def run(folder, text):
    """One forward pass over ``text``, arrays read-only, cached on the model and the text.

    Returns
    -------
    engine.bert.BertRun, or the error saying why not (ModelUnavailableError,
    CheckpointError, TooLongError, or a ValueError for a text with no tokens)
    """
    return minilm.run(text) if folder is None else _run(folder, text)


@cache.bounded
def _run(folder, text):
    loaded = load(folder)
    if isinstance(loaded, Exception):
        return loaded
    try:
        return bert.run(loaded, text, parallel=threads.parallel())
    except (bert.TooLongError, ValueError) as error:  # ValueError: GPT-2 with no tokens
        return error


def rollout(folder, text):
    """Attention rollout through every layer for ``text``, shape (n, n)."""
    return minilm.rollout(text) if folder is None else _rollout(folder, text)


@cache.bounded
def _rollout(folder, text):
    return analysis.attention_rollout(run(folder, text).attentions)


def ranked_heads(folder, text, query, key):
    """Every head ranked by the weight from token ``query`` to token ``key``."""
    if folder is None:
        return minilm.ranked_heads(text, query, key)
    return analysis.rank_heads(run(folder, text).attentions, query, key)


def head_grid(folder, text, query, key):
    """The weight from ``query`` to ``key`` in every head, shape (n_layers, n_heads)."""
    return np.asarray(run(folder, text).attentions[:, :, query, key])


@cache.bounded
def sinks(folder, text):
    """Where the model's attention parks on ``text``: :func:`engine.analysis.attention_sinks`."""
    this, config = run(folder, text), model(folder).config
    return analysis.attention_sinks(this.attentions, bert.attention_mask(config, len(this.ids)))


#: The rotary view's distances: 0 to this many tokens apart, or the model's positions.
ROTARY_DISTANCES = 256


@cache.bounded
def rotary(folder, text, layer, head, query, key):
    """Head ``head``'s score of token ``query``'s q and token ``key``'s k, moved apart.

    Returns
    -------
    engine.analysis.RotaryScores, at distances 0 … the model's positions (at most
    :data:`ROTARY_DISTANCES`)
    """
    loaded = load(folder)
    q, k = bert.head_vectors(loaded, run(folder, text), layer, head)
    c = loaded.config
    distances = np.arange(min(c.max_tokens, ROTARY_DISTANCES))
    return analysis.rotary_scores(q[query], k[key], distances, c.d_head**-0.5, **c.rotary)


@cache.bounded
def sweep(folder, text, k=TOP_K):
    """The next token's top ``k`` at every stop of :data:`TEMPERATURES`: the slider's frames.

    Returns
    -------
    tokens : list of str, the top k as the model's own token strings (``Ġthe``), likeliest
        first: a byte-level token alone may be part of a character, which its text cannot show
    frames : engine.generate.TemperatureSweep
    """
    loaded, this = load(folder), run(folder, text)
    frames = generate.temperature_sweep(this.next_logits, TEMPERATURES, k)
    return [loaded.tokenizer.id_to_token(int(i)) for i in frames.ids], frames


@cache.bounded
def generation(folder, text, n_new, temperature, seed):
    """``n_new`` tokens after ``text``, greedy at temperature 0, else drawn with ``seed``.

    Run when the page's button asks (:func:`engine.generate.generate`: one pass over the
    text, then one token's work per token); each step keeps the last token's attention row.

    Returns
    -------
    list of engine.generate.Step
    """
    return generate.generate(
        load(folder), text, n_new, temperature, seed, TOP_K, threads.parallel()
    )
