"""A long text's run: every head's weights, queries and keys computed when read, never all held.

``A^{(ℓ, h)}[Q] = softmax(s · Q_h[Q] K_hᵀ + M[Q])`` for the query rows ``Q`` read: past
:data:`engine.bert.KEPT_WEIGHTS` numbers the pass keeps each layer's hidden state and
lets the weights go (a model's heads over 4,096 tokens would hold gigabytes), and
:class:`Attentions` and :class:`PerLayer` stand where ``BertRun.attentions``,
``.queries`` and ``.keys`` hold ndarrays for a short text. They read as those arrays do;
each read computes only the rows asked for, from the layer's hidden state, by the pass's
own arithmetic (its groups of heads, :mod:`engine.parts`; its blocks of query rows,
:func:`engine.blocked.attention_rows`), so to the pass's bits.
"""

from __future__ import annotations

import functools

import numpy as np

from engine import blas
from engine.attention import head_projections
from engine.blocked import attention_rows
from engine.checkpoint import upcast
from engine.layer_config import _layer_settings, _norm, attention_mask
from engine.parts import parts_for, share

__all__ = ["WHOLE_WEIGHTS", "Attentions", "PerLayer"]


#: :class:`Attentions` makes the whole array when asked for (``np.asarray``) up to this
#: many numbers (1 GiB of float32), and says to read a layer or a head beyond.
WHOLE_WEIGHTS = 2**28


class Attentions:
    """Every layer's and head's weights of a long text, computed when read: never all at once.

    Reads as the ndarray of shape (n_layers, n_heads, n, n) that a short text's pass
    keeps (:data:`engine.bert.KEPT_WEIGHTS`): ``attentions[layer, head]`` is one head's
    (n, n) weights, ``attentions[layer]`` a layer's (n_heads, n, n), ``attentions[:, :, -1]``
    the last token's row in every head, each computed from the pass's hidden state of that
    layer by the pass's own arithmetic (:func:`engine.one_layer.head_weights`), so to the
    same bits. An index is read one axis at a time (an int, a slice or a list of ints per
    axis), and only the rows asked for are computed. ``np.asarray`` makes the whole array
    where it holds at most :data:`WHOLE_WEIGHTS` numbers, and otherwise raises a
    ``MemoryError`` that says
    to read a layer or a head.

    Parameters
    ----------
    rows : callable, ``rows(layer, heads, queries, masks)`` -> float32 ndarray of shape
        (len(heads), len(queries), n): the weights of those heads' rows; ``masks`` a dict
        the layers of one read share (each mask made once for them)
    shape : tuple, (n_layers, n_heads, n, n)
    last_rows : ndarray of shape (n_layers, n_heads, n), optional
        The last query's row of every head, kept by the pass: read without computing.
    """

    ndim = 4
    dtype = np.dtype(np.float32)

    def __init__(self, rows, shape, last_rows=None):
        self._compute = rows
        self.shape = tuple(shape)
        self._last = last_rows

    def __len__(self):
        return self.shape[0]

    @property
    def size(self):
        """Numbers in the whole array."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self):
        """Bytes the whole array would take."""
        return self.size * self.dtype.itemsize

    def __repr__(self):
        n_layers, n_heads, n, _ = self.shape
        return f"Attentions({n_layers} layers × {n_heads} heads × {n} × {n}, computed when read)"

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if any(k is Ellipsis for k in key):
            at = next(i for i, k in enumerate(key) if k is Ellipsis)
            key = key[:at] + (slice(None),) * (4 - len(key) + 1) + key[at + 1 :]
        if len(key) > 4:
            raise IndexError(f"too many indices for weights of shape {self.shape}")
        key = key + (slice(None),) * (4 - len(key))
        picked = [_axis_index(k, size) for k, size in zip(key[:3], self.shape[:3], strict=True)]
        (layers, one_layer), (heads, one_head), (queries, one_query) = picked
        masks = {}  # -> [L, H, Q, n]
        out = np.stack([self._rows(int(layer), heads, queries, masks) for layer in layers])
        out = out[(slice(None), slice(None), slice(None), key[3])]  # the keys asked for
        drop = tuple(0 if one else slice(None) for one in (one_layer, one_head, one_query))
        return out[drop]

    def _rows(self, layer, heads, queries, masks):
        last = self.shape[2] - 1
        if self._last is not None and (queries == last).all():
            return np.repeat(self._last[layer, heads][:, None], len(queries), axis=1)
        return self._compute(layer, heads, queries, masks)

    def __array__(self, dtype=None, copy=None):
        if self.size > WHOLE_WEIGHTS:
            n_layers, n_heads, n, _ = self.shape
            raise MemoryError(
                f"Every head's weights over {n} tokens would take {self.nbytes / 2**30:.1f} GiB "
                f"({n_layers} layers × {n_heads} heads × {n} × {n} float32). Read one layer "
                "at a time (attentions[layer]) or one head (attentions[layer, head]), or "
                "the summaries (run.summaries)."
            )
        whole = self[:]
        return whole if dtype is None else whole.astype(dtype, copy=False)


def _axis_index(key, size):
    """One axis's index as (the positions it picks, whether it drops the axis)."""
    if isinstance(key, int | np.integer):
        if not -size <= key < size:
            raise IndexError(f"index {key} is out of bounds for an axis of size {size}")
        return np.asarray([key % size]), True
    picked = np.arange(size)[key]
    if picked.ndim != 1:
        raise IndexError("Attentions takes an int, a slice or a list of ints per axis")
    return picked, False


def _layer_input(config, blocks, hidden_states, layer):
    """Layer ``layer``'s parameters (float32) and its attention's input, as the pass had them."""
    block = upcast(blocks[layer])
    x = hidden_states[layer]
    if config.norm_first:
        x = _norm(config)(x, **block["ln_1"], eps=config.eps)
    return block, x


def _projections(config, block, x, layer, heads, values=True, made=None, queries=None):
    """The queries, keys and values of the heads in ``heads`` (a slice), as the pass made them.

    ``values`` False projects no values; ``made`` the keys of the groups before
    (:func:`engine.attention.head_projections`).
    """
    attn = {name: w for name, w in block["attn"].items() if name not in ("w_o", "b_o")}
    settings = _layer_settings(config, layer)
    return head_projections(
        x,
        **attn,
        n_heads=config.n_heads,
        heads=heads,
        rotary=settings["rotary"],
        n_kv_heads=config.n_kv_heads,
        qk_norm=functools.partial(settings["norm"], eps=config.eps),
        values=values,
        made=made,
        queries=queries,
    )


def _groups(config, n):
    """The pass's groups of heads (:mod:`engine.parts`): a group computed again has its bits."""
    parts = min(parts_for(n), config.n_heads)
    return [share(config.n_heads, parts, part) for part in range(parts)]


@blas.one_thread
def _rows(config, blocks, hidden_states, layer, heads, queries, masks=None):
    """Rows ``queries`` of heads ``heads`` of layer ``layer``, as the pass computed them.

    Only what those rows need: no values, each key/value head's keys once, every query
    of a group (one row's own product may round differently from the pass's), and the
    scores of the blocks holding those rows with the softmax of those rows alone.
    ``masks``, a dict, keeps each window's mask for the next layer read with it.
    """
    c = config
    block, x = _layer_input(c, blocks, hidden_states, layer)
    n = len(x)
    masks = {} if masks is None else masks
    if c.window(layer) not in masks:
        masks[c.window(layer)] = attention_mask(c, n, layer=layer)
    mask = masks[c.window(layer)]
    settings = _layer_settings(c, layer)
    heads = np.asarray(heads, dtype=np.intp)
    out = np.empty((len(heads), len(queries), n), dtype=np.float32)
    made = {}  # each key/value head's keys, made once for the groups that share it
    for group in _groups(c, n):
        wanted = np.flatnonzero((heads >= group.start) & (heads < group.stop))
        if len(wanted):
            q, k, _ = _projections(c, block, x, layer, group, False, made, queries)
            local = heads[wanted] - group.start
            out[wanted] = attention_rows(
                q[local], k[local], queries, mask, settings["scale"], settings["softcap"]
            )
    return out


@blas.one_thread
def _vectors(config, blocks, hidden_states, which, layer):
    """Layer ``layer``'s queries (``which`` 0) or keys (1) per query head, as the pass had them."""
    block, x = _layer_input(config, blocks, hidden_states, layer)
    groups, made = _groups(config, len(x)), {}
    return np.concatenate(
        [_projections(config, block, x, layer, g, False, made)[which] for g in groups]
    )


class PerLayer:
    """An array of shape (n_layers, ...) computed a layer at a time when read.

    A long text's queries and keys (``BertRun.queries``, ``.keys``): indexed as the ndarray
    a short text's pass keeps, ``queries[layer, head]`` of shape (n, d_head).

    Parameters
    ----------
    layer : callable, ``layer(i)`` -> ndarray of shape ``shape[1:]``
    shape : tuple
    """

    dtype = np.dtype(np.float32)

    def __init__(self, layer, shape):
        self._layer = layer
        self.shape = tuple(shape)
        self.ndim = len(self.shape)

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return f"PerLayer(shape={self.shape}, computed a layer at a time when read)"

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        first, rest = (key[0], key[1:]) if key else (slice(None), ())
        layers, one = _axis_index(first, self.shape[0])
        picked = np.stack([self._layer(int(i))[rest] for i in layers])
        return picked[0] if one else picked

    def __array__(self, dtype=None, copy=None):
        whole = self[:]
        return whole if dtype is None else whole.astype(dtype, copy=False)
