r"""What each head does, in a few numbers per head: the summaries a long text's views draw.

A head's weights over ``n`` tokens are ``n × n`` numbers; at 4,096 tokens a model's heads
hold gigabytes of them. These summaries are a handful of numbers per head (and one key
per query), computed during the pass from each block of rows as it is made
(:func:`engine.attention.blocked_attention`), so a long text's pass never keeps the
weights themselves. With ``w_ij`` the weight query ``i`` puts on key ``j`` and the means
over the ``n`` queries:

- the share on the first token, the attention sink of Xiao et al. 2023 ("Efficient
  Streaming Language Models with Attention Sinks"): :math:`\frac1n \sum_i w_{i0}`;
- the entropy in bits, as Clark et al. 2019 ("What Does BERT Look At?", section 3.3)
  measure how broadly a head attends: :math:`\frac1n \sum_i -\sum_j w_{ij} \log_2 w_{ij}`
  (``0 \log 0 = 0``);
- the mean distance attended, as Vig & Belinkov 2019 ("Analyzing the Structure of
  Attention in a Transformer Language Model", section 5.2):
  :math:`\frac1n \sum_i \sum_j w_{ij} |i - j|`;
- the weight on the previous token (Clark et al. 2019, section 3.2):
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
    """The summaries' sums over queries, added to a block of rows at a time, per head.

    Parameters
    ----------
    n_heads, n : int; the heads (of one layer, or all layers' flattened) and tokens
    """

    def __init__(self, n_heads, n):
        self.n = n
        self.sums = np.zeros((4, n_heads), dtype=np.float64)  # first, entropy, distance, prev
        self.strongest = np.zeros((n_heads, n), dtype=np.int32)

    def add(self, head, rows, weights):  # rows of [n_q, n] weights, whole rows
        """Add the rows ``rows`` (a slice) of head ``head``'s weights, ``(n_q, n)``."""
        part = head_summaries_rows(weights, rows)
        self.sums[:, head] += part[:4]
        self.strongest[head, rows] = part[4]

    def summaries(self):
        """HeadSummaries over the heads, the sums divided by the queries counted."""
        first, entropy, distance, previous = self.sums
        n = self.n
        return HeadSummaries(
            (first / n).astype(np.float32),
            (entropy / n).astype(np.float32),
            (distance / n).astype(np.float32),
            (previous / max(n - 1, 1)).astype(np.float32),
            self.strongest,
        )


def head_summaries_rows(weights, rows):
    """Sums over a block of whole rows: first-token, entropy (bits), distance, previous; argmax."""
    w = np.asarray(weights)
    i = np.arange(rows.start, rows.stop)[:, None]
    j = np.arange(w.shape[-1])[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log2(w, where=w > 0, out=np.zeros(w.shape, dtype=np.float32))
    previous = w[i[:, 0] >= 1, i[i[:, 0] >= 1, 0] - 1] if len(w) else w[:0, 0]
    return (
        float(w[:, 0].sum(dtype=np.float64)),
        -float(np.einsum("ij,ij->", w, logs, dtype=np.float64)),
        float(np.einsum("ij,ij->", w, np.abs(i - j).astype(np.float32), dtype=np.float64)),
        float(previous.sum(dtype=np.float64)),
        np.argmax(w, axis=-1).astype(np.int32),
    )
