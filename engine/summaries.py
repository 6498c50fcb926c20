r"""What each head does, in a few numbers per head: the summaries a long text's views draw.

A head's weights over ``n`` tokens are ``n × n`` numbers; at 4,096 tokens a model's heads
hold gigabytes of them. These summaries are a handful of numbers per head (and one key
per query), computed during the pass from each block of rows as it is made
(:func:`engine.blocked.blocked_attention`), so a long text's pass never keeps the
weights themselves. With ``w_ij`` the weight query ``i`` puts on key ``j`` and the means
over the ``n`` queries:

- the share on the first token, the attention sink of Xiao et al. 2023 ("Efficient
  Streaming Language Models with Attention Sinks"): :math:`\frac1n \sum_i w_{i0}`;
- the entropy in bits, as Clark et al. 2019 ("What Does BERT Look At?", section 3.3)
  measure how broadly a head attends: :math:`\frac1n \sum_i -\sum_j w_{ij} \log_2 w_{ij}`
  (``0 \log 0 = 0``);
- the mean distance attended, as Vig & Belinkov 2019 ("Analyzing the Structure of
  Attention in a Transformer Language Model"):
  :math:`\frac1n \sum_i \sum_j w_{ij} |i - j|`;
- the weight on the previous token (Clark et al. 2019, section 3.1, relative position):
  :math:`\frac1{n-1} \sum_{i \ge 1} w_{i, i-1}`, 0 for a single token;
- the strongest key of each query, :math:`\arg\max_j w_{ij}` (the first, on a tie).

:func:`head_summaries` computes them from whole weights; the pass's block-wise sums agree
with it to float32's rounding (tests/engine/test_summaries.py).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["HeadSummaries", "SummarySums", "head_summaries"]


class HeadSummaries(NamedTuple):
    r"""Every head's summaries (see the module's docstring for each formula).

    Attributes
    ----------
    first_token : float32 ndarray of shape (n_layers, n_heads)
        :math:`\frac1n \sum_i w_{i0}`, the mean weight on the first token (a sink).
    entropy : float32 ndarray of shape (n_layers, n_heads)
        :math:`\frac1n \sum_i -\sum_j w_{ij} \log_2 w_{ij}`, in bits.
    distance : float32 ndarray of shape (n_layers, n_heads)
        :math:`\frac1n \sum_i \sum_j w_{ij} |i - j|`, in tokens.
    previous : float32 ndarray of shape (n_layers, n_heads)
        :math:`\frac1{n-1} \sum_{i \ge 1} w_{i,i-1}`; 0 when ``n = 1``.
    strongest : int32 ndarray of shape (n_layers, n_heads, n)
        :math:`\arg\max_j w_{ij}` for each query ``i``.

    (Over any leading dimensions, not only layers and heads, from :func:`head_summaries`.)
    """

    first_token: np.ndarray
    entropy: np.ndarray
    distance: np.ndarray
    previous: np.ndarray
    strongest: np.ndarray


def head_summaries(weights):  # [..., n, n] -> HeadSummaries of [...] (strongest [..., n])
    r"""The summaries of whole weights, each head's over its ``n`` queries.

    Parameters
    ----------
    weights : ndarray of shape (..., n, n), each row a softmax (non-negative, summing to 1)

    Returns
    -------
    HeadSummaries, each field over the leading dimensions ``...`` (``strongest`` with a
    last dimension ``n``)
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim < 2 or w.shape[-1] != w.shape[-2]:
        raise ValueError(f"weights must have shape (..., n, n), got {w.shape}")
    n = w.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(w > 0, w * np.log2(np.where(w > 0, w, 1.0)), 0.0)
    i, j = np.indices((n, n))
    previous = np.diagonal(w, offset=-1, axis1=-2, axis2=-1)  # w_{i, i-1}, [..., n - 1]
    return HeadSummaries(
        first_token=w[..., :, 0].mean(axis=-1).astype(np.float32),
        entropy=(-plogp.sum(axis=-1)).mean(axis=-1).astype(np.float32),
        distance=(w * np.abs(i - j)).sum(axis=-1).mean(axis=-1).astype(np.float32),
        previous=(previous.mean(axis=-1) if n > 1 else np.zeros(w.shape[:-2])).astype(np.float32),
        strongest=np.argmax(w, axis=-1).astype(np.int32),
    )


class SummarySums:
    r"""The summaries' sums over queries, added a block of rows at a time, head by head.

    What :func:`engine.blocked.blocked_attention` hands over of each block lets the
    sums skip passes over the weights: with the shifted scores ``e_ij = x_ij - max_j x_ij``
    and the row's ``Z_i = \sum_j e^{e_ij}`` (so ``w_ij = e^{e_ij} / Z_i``), the entropy is
    ``\ln Z_i - \sum_j w_ij e_ij`` nats, and where no key lies after its query (a causal
    model) the distance is ``i - \sum_j w_ij j``.

    Parameters
    ----------
    n_heads, n : int; the heads (a model's, all layers flattened) and tokens
    """

    def __init__(self, n_heads, n):
        self.n = n
        self.sums = np.zeros((4, n_heads), dtype=np.float64)  # first, entropy, distance, prev
        self.strongest = np.zeros((n_heads, n), dtype=np.int32)
        self.last_row = np.zeros((n_heads, n), dtype=np.float32)  # the last query's weights

    def add(self, head, block, weights, shifted, total):
        """Add one block of one head: its rows' weights over its keys.

        Parameters
        ----------
        head : int
        block : the block (its ``rows`` and ``keys`` slices, ``empty`` rows and
            ``distances``, as :func:`engine.blocked.blocked_attention` makes it)
        weights, shifted : ndarray of shape (b, n_k), the weights and ``x - max``
        total : ndarray of shape (b, 1), each row's sum of ``exp(shifted)``
        """
        rows, keys = block.rows, block.keys
        i = np.arange(rows.start, rows.stop)
        entropy = np.log(total[:, 0]) - np.einsum("ij,ij->i", weights, shifted)
        if block.distances is None:  # every key at or before its query
            distance = i - weights @ np.arange(keys.start, keys.stop, dtype=weights.dtype)
        else:
            distance = np.einsum("ij,ij->i", weights, block.distances)
        if block.empty is not None:  # no key seen: the row is all 0
            entropy[block.empty] = 0.0
            distance[block.empty] = 0.0
        before = (i >= 1) & (i - 1 >= keys.start) & (i - 1 < keys.stop)
        previous = weights[before.nonzero()[0], i[before] - 1 - keys.start]
        first = weights[:, 0].sum(dtype=np.float64) if keys.start == 0 else 0.0
        self.sums[:, head] += (
            first,
            entropy.sum(dtype=np.float64) / np.log(2.0),
            distance.sum(dtype=np.float64),
            previous.sum(dtype=np.float64),
        )
        self.strongest[head, rows] = np.argmax(weights, axis=-1) + keys.start
        if rows.stop == self.n:  # the last query's row, kept whole: the next token's attention
            self.last_row[head, keys] = weights[-1]

    def summaries(self):
        """HeadSummaries over the heads: the sums divided by the queries counted."""
        first, entropy, distance, previous = self.sums
        n = self.n
        return HeadSummaries(
            (first / n).astype(np.float32),
            (entropy / n).astype(np.float32),
            (distance / n).astype(np.float32),
            (previous / max(n - 1, 1)).astype(np.float32),
            self.strongest,
        )
