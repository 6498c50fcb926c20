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

from app.data import cache, passes, threads, trained
from engine import (
    analysis,
    bert,
    checkpoint,
    generate,
    layer_config,
    ollama,
    one_layer,
    positional,
    roles,
    tiling,
)
from engine.resources import MINILM_NAME, SMOLLM2_NAME

__all__ = [
    "FOLDER_BOX_VARIABLE",
    "MODEL_VARIABLE",
    "TEMPERATURES",
    "generation",
    "head_grid",
    "head_roles",
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
    """The model the server was started with (``--model``), or None for MiniLM."""
    folder = os.environ.get(MODEL_VARIABLE, "").strip()
    return source_of(folder) if folder and folder != MINILM_NAME else None


def source_of(typed):
    """What :func:`engine.checkpoint.load` is given for a typed model: a name kept, a path resolved.

    ``smollm2`` and ``ollama:NAME[:TAG]`` are names; anything else is a folder's or a
    ``.gguf`` file's path, made absolute.
    """
    if typed == SMOLLM2_NAME or typed.startswith(ollama.PREFIX):
        return typed
    return str(Path(typed).expanduser().resolve())


def is_gguf(source):
    """Whether ``source`` (as :func:`source_of` gives it) is read from a GGUF file."""
    return source == SMOLLM2_NAME or source.startswith(ollama.PREFIX) or Path(source).is_file()


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
    """The path of the folder a link names, or None when this server has not loaded it.

    A packaged model's name (``smollm2``) stands for itself on every server.
    """
    if name == SMOLLM2_NAME:
        return name
    start = start_folder()
    if start is not None and name_of(start) == name:
        return start
    known, lock = _known()
    with lock:
        return known.get(name)


def load(folder):
    """The model at ``folder`` (an absolute path, or a name), or the CheckpointError saying why not.

    A packaged model is a server resource as MiniLM is, loaded once (:mod:`app.data.trained`).
    """
    name = _packaged(folder)
    return trained.model(name) if name else _load(str(folder))


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
    name = _packaged(folder)
    return trained.model(name) if name else load(folder)


def _packaged(folder):
    """The packaged model's name ``folder`` stands for (None: MiniLM), or None for a source.

    The core pages and /pretrained then share one model and one run per text.
    """
    if folder is None:
        return MINILM_NAME
    return folder if folder == SMOLLM2_NAME else None


def run(folder, text):
    """One forward pass over ``text``, arrays read-only, cached on the model and the text.

    Returns
    -------
    engine.bert.BertRun, or the error saying why not (ModelUnavailableError,
    CheckpointError, TooLongError, or a ValueError for a text with no tokens)
    """
    name = _packaged(folder)
    return trained.run(name, text) if name else _run(folder, text)


@cache.bounded
def _run(folder, text):
    loaded = load(folder)
    if isinstance(loaded, Exception):
        return loaded
    try:
        return passes.run(loaded, text, parallel=threads.parallel())
    except (bert.TooLongError, ValueError) as error:  # ValueError: GPT-2 with no tokens
        return error


def rollout(folder, text):
    """Attention rollout through every layer for ``text``, shape (n, n)."""
    name = _packaged(folder)
    return trained.rollout(name, text) if name else _rollout(folder, text)


@cache.bounded
def _rollout(folder, text):
    return analysis.attention_rollout(run(folder, text).attentions)


@cache.bounded
def ranked_heads(folder, text, query, key):
    """Every head ranked by the weight from token ``query`` to token ``key``."""
    rows = query_rows(folder, text, query)[:, :, None, :]  # -> [n_layers, n_heads, 1, n]
    return analysis.rank_heads(rows, 0, key)


def head_grid(folder, text, query, key):
    """The weight from ``query`` to ``key`` in every head, shape (n_layers, n_heads)."""
    return query_rows(folder, text, query)[:, :, key]


@cache.bounded
def query_rows(folder, text, query):
    """How token ``query`` attends in every head, shape (n_layers, n_heads, n)."""
    return np.array(run(folder, text).attentions[:, :, query], dtype=np.float32)


@cache.bounded
def head_view(folder, text, layer, head, reduction, rows, cols, token, tiles, cells):
    """A long text's head, computed once for all its views: the map, the zoom, a row.

    Parameters
    ----------
    reduction : ``"max"`` or ``"mean"``, each tile's (:func:`engine.tiling.tile`)
    rows, cols : (int, int), the zoom's queries and keys, start and stop
    token : int, the query whose row is kept
    tiles : int, the most tiles on a side of the whole map and of a zoom too large for cells
    cells : int, the zoom holds exact cells once its rows and columns are this many or fewer

    Returns
    -------
    overview : engine.tiling.Tiles of the whole map
    zoomed : ndarray of shape (rows, cols), the exact weights, or the Tiles of that block
    row : ndarray of shape (cols[1] - cols[0],), token ``token``'s weights on the zoom's keys
    """
    weights = run(folder, text).attentions[layer, head]  # [n, n], computed now
    overview = tiling.tile(weights, tiles, reduction)
    block = weights[rows[0] : rows[1], cols[0] : cols[1]]
    small = rows[1] - rows[0] <= cells and cols[1] - cols[0] <= cells
    zoomed = np.array(block) if small else tiling.tile(block, tiles, reduction)
    return overview, zoomed, np.array(weights[token, cols[0] : cols[1]])


@cache.bounded
def head_tiles(folder, text, layer, head, tiles, reduction="max"):
    """One head's weights on ``text``, at most ``tiles`` a side (:func:`engine.tiling.tile`)."""
    return tiling.tile(run(folder, text).attentions[layer, head], tiles, reduction)


@cache.bounded
def layer_window(folder, text, layer, window):
    """Every head of ``layer`` on the tokens ``window = (start, stop)``: (n_heads, w, w).

    Only the window's rows are asked for, so a long text's pass computes no more.
    """
    start, stop = window
    return np.array(run(folder, text).attentions[layer, :, start:stop, start:stop])


@cache.bounded(spinner="Pooling every head's weights …")
def thumbnails(folder, text, size):
    """Every head's weights pooled to at most ``size`` a side (:func:`engine.tiling.tile_heads`)."""
    return tiling.tile_heads(run(folder, text).attentions, size, "max")


def head_roles(folder):
    """Every head's role scores on repeated random tokens (:func:`engine.roles.head_roles`).

    Cached per model, as the model is: the scores do not depend on the text.

    Returns
    -------
    engine.roles.HeadRoles, or the error saying why not (ModelUnavailableError,
    CheckpointError, or a ValueError for a vocabulary too small)
    """
    name = _packaged(folder)
    return trained.head_roles(name) if name else _head_roles(folder)


@cache.bounded(spinner="Scoring every head on repeated random tokens …")
def _head_roles(folder):
    loaded = load(folder)
    if isinstance(loaded, Exception):
        return loaded
    try:
        return roles.head_roles(loaded, parallel=threads.parallel())
    except ValueError as error:  # a vocabulary smaller than R
        return error


@cache.bounded
def sinks(folder, text, long=False):
    """Where the model's attention parks on ``text``: :func:`engine.analysis.attention_sinks`.

    ``long``: from the pass's summaries instead (:func:`engine.analysis.summary_sinks`),
    for a text whose heads' weights are computed on demand.
    """
    this, config = run(folder, text), model(folder).config
    if long:
        return analysis.summary_sinks(this.summaries, config)
    n = len(this.ids)
    if config.layer_types:  # Gemma 3: each layer's own mask, local or global
        mask = np.stack(
            [layer_config.attention_mask(config, n, layer=i) for i in range(config.n_layers)]
        )
    else:
        mask = layer_config.attention_mask(config, n)
    return analysis.attention_sinks(this.attentions, mask)


#: The rotary view's distances: 0 to the model's positions, at most this many (a Gemma 3's
#: 131,072 positions would send a megabyte a run).
ROTARY_DISTANCES = 32_768


@cache.bounded
def rotary(folder, text, layer, head, query, key):
    """Head ``head``'s score of token ``query``'s q and token ``key``'s k, moved apart.

    Returns
    -------
    engine.analysis.RotaryScores, at every distance from 0 to the model's positions (at
    most :data:`ROTARY_DISTANCES`)
    """
    loaded = load(folder)
    q, k = one_layer.head_vectors(loaded, run(folder, text), layer, head)
    c = loaded.config
    distances = np.arange(min(c.max_tokens, ROTARY_DISTANCES))
    scale = c.attn_scale or c.d_head**-0.5
    return analysis.rotary_scores(q[query], k[key], distances, scale, **c.rotary_at(layer))


def rotary_frequencies(folder):
    """The model's rotary angle per token of each feature pair, unscaled and as it scales them.

    Returns
    -------
    plain, scaled : float32 ndarray of shape (d_head // 2,) each
        :func:`engine.positional.rotary_frequencies` without and with the model's
        ``rope_scaling``.
    """
    c = load(folder).config
    plain = positional.rotary_frequencies(c.d_head, c.rope_theta, dtype=np.float32)
    scaled = positional.rotary_frequencies(
        c.d_head, c.rope_theta, c.rope_factor, c.rope_llama3, np.float32
    )
    return plain, scaled


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

    Run when the page's button asks (:func:`engine.generate.generate`, from the page's own
    pass, then one token's work per token); each step keeps the last token's attention row.

    Returns
    -------
    list of engine.generate.Step
    """
    args = (n_new, temperature, seed, TOP_K, threads.parallel(), run(folder, text))
    return generate.generate(load(folder), text, *args)
