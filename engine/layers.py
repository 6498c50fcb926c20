"""A transformer encoder layer: attention and feed-forward sub-layers with residuals and LayerNorm.

Post-LN is the original arrangement (Vaswani et al. 2017, section 3.1):
``x ← LN(x + Sublayer(x))``. Pre-LN (Xiong et al. 2020, "On Layer Normalization in the
Transformer Architecture") normalises the sub-layer's input instead,
``x ← x + Sublayer(LN(x))``, leaving the residual stream itself un-normalised.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine.attention import MultiHeadResult, multi_head_attention
from engine.toy import toy_weights

__all__ = [
    "EncoderLayerResult",
    "EncoderWeights",
    "encoder_layer",
    "feed_forward",
    "layer_norm",
    "toy_encoder_weights",
]


def layer_norm(x, g=None, b=None, eps=1e-5):
    r"""Layer normalisation over the features of each token (Ba et al. 2016).

    .. math:: \operatorname{LN}(x) = g \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + b

    The variance is the biased one (divide by d_model) and ``ε`` sits inside the square
    root, as in PyTorch and the original paper; the seed article's ``std + ε`` is a
    different (if close) function.

    Parameters
    ----------
    x : ndarray of shape (..., d_model)
    g, b : ndarray of shape (d_model,), optional; gain and bias, default 1 and 0
    eps : float

    Returns
    -------
    ndarray of shape (..., d_model)
    """
    out = x - x.mean(axis=-1, keepdims=True)  # a new array: the caller's x is untouched
    variance = np.mean(out * out, axis=-1, keepdims=True)
    out /= np.sqrt(variance + eps)  # in place from here: fewer passes over memory
    if g is not None:
        out *= g
    if b is not None:
        out += b
    return out


def feed_forward(x, w_1, b_1, w_2, b_2):
    r"""Position-wise feed-forward network (Vaswani et al. 2017, eq. 2).

    .. math:: \operatorname{FFN}(x) = \max(0,\ x W_1 + b_1)\, W_2 + b_2

    Parameters
    ----------
    x : ndarray of shape (n, d_model)
    w_1 : ndarray of shape (d_model, d_ff); b_1 : ndarray of shape (d_ff,)
    w_2 : ndarray of shape (d_ff, d_model); b_2 : ndarray of shape (d_model,)

    Returns
    -------
    hidden : ndarray of shape (n, d_ff), after the ReLU
    out : ndarray of shape (n, d_model)
    """
    hidden = np.maximum(x @ w_1 + b_1, 0.0)  # [n, d_model] @ [d_model, d_ff] -> [n, d_ff]
    return hidden, hidden @ w_2 + b_2  # -> [n, d_model]


class EncoderWeights(NamedTuple):
    """Parameters of one encoder layer (LayerNorm gains 1 and biases 0 when untrained)."""

    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray
    w_1: np.ndarray
    b_1: np.ndarray
    w_2: np.ndarray
    b_2: np.ndarray


def toy_encoder_weights(d_model, d_ff, seed):
    """Seeded random encoder weights; attention weights are those of :func:`toy_weights`.

    FFN weights are N(0, 1/fan_in), biases zero.

    Returns
    -------
    EncoderWeights
    """
    rng = np.random.default_rng([int(seed), int(d_model), int(d_ff), 1])
    w_1 = rng.standard_normal((d_model, d_ff)) / np.sqrt(d_model)
    w_2 = rng.standard_normal((d_ff, d_model)) / np.sqrt(d_ff)
    return EncoderWeights(*toy_weights(d_model, seed), w_1, np.zeros(d_ff), w_2, np.zeros(d_model))


class EncoderLayerResult(NamedTuple):
    """Every stage of one encoder layer.

    Attributes
    ----------
    streams : ndarray of shape (3, n, d_model)
        The residual stream: the input, after the attention sub-layer, after the FFN
        sub-layer (the layer's output).
    attention : MultiHeadResult
    attention_update : ndarray of shape (n, d_model)
        What the attention sub-layer added to the stream (before any post-LN).
    ffn_hidden : ndarray of shape (n, d_ff)
    ffn_update : ndarray of shape (n, d_model)
        What the FFN sub-layer added to the stream (before any post-LN).
    """

    streams: np.ndarray
    attention: MultiHeadResult
    attention_update: np.ndarray
    ffn_hidden: np.ndarray
    ffn_update: np.ndarray

    @property
    def output(self):
        """The layer's output, shape (n, d_model)."""
        return self.streams[-1]

    @property
    def stream_norms(self):
        """Euclidean norm of each token's residual stream at each stage, shape (3, n)."""
        return np.linalg.norm(self.streams, axis=-1)

    @property
    def update_norms(self):
        """Norm of what each sub-layer (attention, FFN) added per token, shape (2, n)."""
        return np.linalg.norm(np.stack([self.attention_update, self.ffn_update]), axis=-1)


def encoder_layer(x, weights, n_heads, mask=None, norm_first=False):
    r"""One transformer encoder layer, post-LN or pre-LN.

    .. math:: \text{post-LN:}\quad h = \operatorname{LN}(x + \operatorname{MHA}(x)),\quad
              y = \operatorname{LN}(h + \operatorname{FFN}(h))

    .. math:: \text{pre-LN:}\quad h = x + \operatorname{MHA}(\operatorname{LN}(x)),\quad
              y = h + \operatorname{FFN}(\operatorname{LN}(h))

    Parameters
    ----------
    x : ndarray of shape (n, d_model)
    weights : EncoderWeights
    n_heads : int
    mask : bool ndarray of shape (n, n), optional
    norm_first : bool, pre-LN when true

    Returns
    -------
    EncoderLayerResult
    """
    w = weights
    attn_in = layer_norm(x) if norm_first else x
    attention = multi_head_attention(attn_in, w.w_q, w.w_k, w.w_v, w.w_o, n_heads, mask=mask)
    h = x + attention.output if norm_first else layer_norm(x + attention.output)
    ffn_in = layer_norm(h) if norm_first else h
    hidden, ffn_out = feed_forward(ffn_in, w.w_1, w.b_1, w.w_2, w.b_2)
    y = h + ffn_out if norm_first else layer_norm(h + ffn_out)
    return EncoderLayerResult(np.stack([x, h, y]), attention, attention.output, hidden, ffn_out)
