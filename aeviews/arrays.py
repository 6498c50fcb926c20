"""Any model's attention as NumPy arrays: what BertViz's ``head_view(attention, tokens)`` takes.

``transformers`` returns ``output_attentions`` as a tuple with one tensor per layer, each
``[batch, n_heads, n, n]``. Anything array-like is read: a NumPy array, a sequence of them,
or objects with ``__array__`` or ``.numpy()`` (PyTorch, TensorFlow and JAX arrays), a
PyTorch tensor on a GPU or with a gradient included (``.detach().cpu()`` first), all
without importing their libraries.
"""

from __future__ import annotations

import numpy as np


def as_array(x):
    """``x`` as a NumPy array: through ``.detach()``, ``.cpu()`` and ``.numpy()`` when it has them.

    A bfloat16 tensor, which NumPy has no type for, is read through ``.float()``.
    """
    for step in ("detach", "cpu"):
        if callable(getattr(x, step, None)):
            x = getattr(x, step)()
    if callable(getattr(x, "numpy", None)):
        try:
            return np.asarray(x.numpy())
        except TypeError:  # torch.bfloat16: "Got unsupported ScalarType BFloat16"
            return np.asarray(x.float().numpy())
    return np.asarray(x)


def as_layers(attention, batch=0):
    """A model's attention as one array of shape (n_layers, n_heads, n, n).

    Parameters
    ----------
    attention : the per-layer attention of one forward pass, any of
        - a sequence of n_layers arrays of shape (batch, n_heads, n, n) (``output_attentions``)
        - a sequence of n_layers arrays of shape (n_heads, n, n)
        - one array of shape (n_layers, n_heads, n, n), or (n_layers, batch, n_heads, n, n)
    batch : int, the batch entry drawn when there is a batch axis

    Returns
    -------
    ndarray of shape (n_layers, n_heads, n, n), float32 or wider as given

    Raises
    ------
    ValueError when the shapes are not those of attention maps
    """
    if isinstance(attention, list | tuple):
        layers = [as_array(layer) for layer in attention]
        if not layers:
            raise ValueError("attention holds no layer")
        shapes = {layer.shape for layer in layers}
        if len(shapes) > 1:
            raise ValueError(f"the layers' attention differ in shape: {sorted(shapes)}")
        stacked = np.stack(layers)  # -> [n_layers, (batch,) n_heads, n, n]
    else:
        stacked = as_array(attention)
    if stacked.ndim == 5:
        if not -stacked.shape[1] <= batch < stacked.shape[1]:
            raise ValueError(f"batch {batch} is not in a batch of {stacked.shape[1]}")
        stacked = stacked[:, batch]  # [n_layers, batch, n_heads, n, n] -> [n_layers, n_heads, n, n]
    if stacked.ndim != 4 or stacked.shape[-1] != stacked.shape[-2]:
        raise ValueError(
            "attention must be per layer [batch, heads, n, n] (transformers' output_attentions), "
            f"or [layers, heads, n, n]; got shape {stacked.shape}"
        )
    if not np.issubdtype(stacked.dtype, np.floating):
        stacked = stacked.astype(np.float32)
    return stacked


def check_tokens(tokens, n):
    """``tokens`` as a list of n str, or a ValueError saying how many the attention has."""
    if tokens is None:
        raise ValueError(f"give the {n} tokens the attention is over (tokens=[...])")
    tokens = [str(token) for token in tokens]
    if len(tokens) != n:
        raise ValueError(f"{len(tokens)} tokens for attention over {n}")
    return tokens
