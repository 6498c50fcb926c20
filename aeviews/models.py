"""Our engine on a text, from a notebook: MiniLM by default, SmolLM2, or your own model.

The app reaches the engine through Streamlit's caches (:mod:`app.data`); a notebook has no
Streamlit server, so this module calls the engine itself: :func:`engine.checkpoint.load`
once per model, :func:`engine.bert.run` once per text, :func:`engine.one_layer.layer_run` for
a layer's queries, keys and values. The caches are this process's own (a few entries);
their arrays are read-only.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from app.data import cache
from app.state.weights import DEFAULT_HEADS
from engine import bert, checkpoint, ollama, one_layer
from engine.resources import MINILM_NAME, SMOLLM2_NAME

#: The head the app opens on: MiniLM's layer 3, head 1, whose "it" finds "restaurant"; and
#: another model's, unless it is a packaged one with its own (SmolLM2's layer 22, head 0).
DEFAULT_LAYER, DEFAULT_HEAD = DEFAULT_HEADS["minilm"]


def model_key(model=None):
    """What names a model in this module's caches.

    None (or ``"minilm"``) for MiniLM; ``"smollm2"`` and ``"ollama:NAME[:TAG]"`` as they
    are; a folder's or a ``.gguf`` file's full path.
    """
    if model is None or str(model) == MINILM_NAME:
        return None
    if str(model) == SMOLLM2_NAME or str(model).startswith(ollama.PREFIX):
        return str(model)
    return str(Path(model).expanduser().resolve())


@functools.lru_cache(maxsize=4)
def load(key=None):
    """The model :func:`model_key` names: all-MiniLM-L6-v2 for None, else a checkpoint folder.

    Raises what :func:`engine.checkpoint.load` raises: ModelUnavailableError (MiniLM not
    installed, with the command that installs it) or a CheckpointError saying what the
    folder lacks or holds that the engine does not read.
    """
    return checkpoint.load(key)


# Cached results are shared by every later call: their arrays are made read-only, as the
# app's caches make theirs (:func:`app.data.cache.freeze`).
@functools.lru_cache(maxsize=16)
def _run(key, text):
    return cache.freeze(bert.run(load(key), text))


def _long(run):
    """Whether the run's weights are computed when read.

    A long text's are (:class:`engine.long_run.Attentions`).
    """
    return not isinstance(run.attentions, np.ndarray)


@functools.lru_cache(maxsize=16)
def _layer_run(key, text, layer):
    run = _run(key, text)  # a long text's layer keeps its q, k, v, not every head's weights
    return cache.freeze(one_layer.layer_run(load(key), run, layer, keep_weights=not _long(run)))


@functools.lru_cache(maxsize=4)
def _head_weights(key, text, layer, head):
    return cache.freeze(one_layer.head_weights(load(key), _run(key, text), layer, head))


class Attention:
    """One text through a model, and one of its heads: the engine's arrays and the tokens.

    Attributes
    ----------
    text : str
    model : str or None, the checkpoint folder's full path (None: all-MiniLM-L6-v2)
    tokens : list of n str, the model's tokens ([CLS] and [SEP] included for MiniLM)
    labels : list of n str, the piece of the text each token covers (what the views write)
    attentions : ndarray of shape (n_layers, n_heads, n, n), every head's weights
        (a long text's computed when read, where they fit: see the property)
    summaries : engine.summaries.HeadSummaries, what every head does in a few numbers
    layer, head : int, the head the views draw unless told otherwise
    run : engine.bert.BertRun, the whole forward pass (hidden states, queries, keys …)

    The head's own arrays are properties: ``q``, ``k``, ``v`` of shape (n, d_head),
    ``scores`` (raw q·kᵀ) and ``scaled`` of shape (n, n), ``weights`` (n, n), ``output``
    (n, d_head), ``mask`` (n, n) or None and ``scale`` (1/√d_head).
    """

    def __init__(self, text, model, layer, head):
        self.text, self.model = text, model
        self.run = _run(model, text)
        n_layers, n_heads = self.run.summaries.first_token.shape
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise ValueError(
                f"layer {layer}, head {head} is not in this model's {n_layers} layers of "
                f"{n_heads} heads"
            )
        self.layer, self.head = layer, head

    def __repr__(self):
        n_layers, n_heads, n = self.run.attentions.shape[:3]
        return (
            f"Attention({n} tokens, layer {self.layer}, head {self.head} of "
            f"{n_layers} layers × {n_heads} heads)"
        )

    @property
    def tokens(self):
        """The model's tokens, special tokens included."""
        return list(self.run.tokens)

    @property
    def labels(self):
        """The piece of the text each token covers; a special token's is the token."""
        return list(self.run.labels)

    @property
    def attentions(self):
        """Every head's weights, shape (n_layers, n_heads, n, n).

        A long text's pass keeps none of them (:class:`engine.long_run.Attentions`): here they
        are computed when read, where the whole array holds at most
        :data:`engine.long_run.WHOLE_WEIGHTS` numbers; beyond, a MemoryError says what to
        read instead (``.weights``, one layer's, the summaries).
        """
        found = self.run.attentions
        if not _long(self.run):
            return found
        try:
            return np.asarray(found)
        except MemoryError as error:
            n_layers, n_heads, n = found.shape[:3]
            raise MemoryError(
                f"Every head's weights of this {n}-token text would take "
                f"{found.nbytes / 2**30:.1f} GiB ({n_layers} layers × {n_heads} heads × {n} × "
                f"{n} float32), so they are computed only when read. Read this head's with "
                ".weights (or .at(layer, head).weights), a layer's with .run.attentions[layer], "
                "and what every head does with .summaries."
            ) from error

    @property
    def summaries(self):
        """What every head does, in a few numbers per head (:mod:`engine.summaries`)."""
        return self.run.summaries

    def at(self, layer=None, head=None):
        """The same text and model at another ``layer`` and ``head`` (by default this one's)."""
        layer = self.layer if layer is None else layer
        head = self.head if head is None else head
        return (
            self
            if (layer, head) == (self.layer, self.head)
            else Attention(self.text, self.model, layer, head)
        )

    @property
    def _layer(self):
        return _layer_run(self.model, self.text, self.layer)

    @property
    def q(self):
        """The head's queries, shape (n, d_head)."""
        return self._layer.attention.q[self.head]

    @property
    def k(self):
        """The head's keys, shape (n, d_head)."""
        return self._layer.attention.k[self.head]

    @property
    def v(self):
        """The head's values, shape (n, d_head)."""
        return self._layer.attention.v[self.head]

    @property
    def mask(self):
        """The mask, True where a query may attend (None: none)."""
        return self._layer.mask

    @property
    def scale(self):
        """The factor the scores are scaled by: the model's own 1/√d_head."""
        return float(self._layer.attention.heads.scale)

    @property
    def _own(self):
        """The stages of this head alone: a long text's layer computes no other head's n × n."""
        heads, h = self._layer.attention.heads, self.head
        return heads._replace(q=heads.q[h], k=heads.k[h], weights=None, output=heads.output[h])

    @property
    def scores(self):
        """The raw scores q·kᵀ, shape (n, n)."""
        if _long(self.run):
            return self._own.scores
        return self._layer.attention.heads.scores[self.head]

    @property
    def scaled(self):
        """The scaled scores softmax reads, ``-inf`` where the mask forbids."""
        if _long(self.run):
            return self._own.masked
        return self._layer.attention.heads.masked[self.head]

    @property
    def weights(self):
        """The head's weights, shape (n, n): a long text's computed for this head alone."""
        if _long(self.run):
            return _head_weights(self.model, self.text, self.layer, self.head)
        return self._layer.attention.heads.weights[self.head]

    @property
    def output(self):
        """The head's output, weights @ v, shape (n, d_head)."""
        return self._layer.attention.heads.output[self.head]


def attention(text, model=None, layer=None, head=None):
    """Run ``text`` through ``model`` with our engine: its arrays and tokens, at one head.

    Parameters
    ----------
    text : str
    model : None or "minilm" (all-MiniLM-L6-v2), "smollm2" (SmolLM2-135M-Instruct, from
        its package's GGUF file), "ollama:NAME[:TAG]", or a checkpoint folder's or a
        ``.gguf`` file's path: any model /pretrained reads
    layer, head : int, counted from 0; by default the head the app opens on (MiniLM's
        layer 3, head 1; SmolLM2's layer 22, head 0; layer 3, head 1 of another model)

    Returns
    -------
    Attention

    Raises
    ------
    engine.bert.TooLongError when the text has more tokens than the model has positions
    """
    key = model_key(model)
    default = DEFAULT_HEADS.get(key, (DEFAULT_LAYER, DEFAULT_HEAD))
    layer = default[0] if layer is None else layer
    head = default[1] if head is None else head
    return Attention(text, key, layer, head)
