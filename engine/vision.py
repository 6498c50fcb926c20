"""Self-attention over image patches, as the Vision Transformer reads an image.

Follows Dosovitskiy et al. (2020), "An Image is Worth 16x16 Words", section 3.1: the
image is cut into P × P patches, each flattened patch is projected linearly to
d_model features (the patch embedding E), a position embedding is added, and the
patches attend to each other like tokens. As in the toy text model, the projections
are random but seeded (nothing is trained), and there is no [class] token: the pages
look at patch-to-patch attention. The position embedding is fixed and sinusoidal, in
2-D (half the features encode the row, half the column) or 1-D (raster order).

Images are arrays, never files: uint8 in 0–255 or floats in 0–1, shape (H, W, C) or
(H, W). Reading and writing image files belongs to the app and the scripts.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine import blas
from engine.attention import multi_head_attention
from engine.positional import sinusoidal_positional_encoding
from engine.toy import toy_weights

__all__ = [
    "POSITIONS",
    "VisionRun",
    "attention_overlay",
    "patch_embedding",
    "patch_positions",
    "patchify",
    "run_vision",
    "sample_image",
    "unpatchify",
]

POSITIONS = ("2d", "1d", "none")


def _as_hwc(image):
    image = np.asarray(image)
    if image.ndim == 2:
        image = image[:, :, None]  # grey (H, W) -> (H, W, 1)
    if image.ndim != 3:
        raise ValueError(f"an image must have shape (H, W) or (H, W, C), got {image.shape}")
    return image


def patchify(image, patch):
    """Cut an image into non-overlapping ``patch × patch`` squares, flattened in raster order.

    The image is first cropped at the bottom and right to a multiple of ``patch``
    (``H' = ⌊H / patch⌋ · patch``, likewise W'); the cropped strips belong to no patch.
    Patches are numbered row by row: patch ``r · n_cols + c`` is at grid row r, column c.
    Each flattened patch lists its pixels row by row, channels innermost.

    Parameters
    ----------
    image : ndarray of shape (H, W, C) or (H, W)
    patch : int, 1 <= patch <= min(H, W)

    Returns
    -------
    patches : ndarray of shape (n_rows · n_cols, patch · patch · C), the image's dtype
    grid : tuple (n_rows, n_cols)
    """
    image = _as_hwc(image)
    height, width, channels = image.shape
    if not 1 <= patch <= min(height, width):
        raise ValueError(f"patch must be between 1 and {min(height, width)}, got {patch}")
    n_rows, n_cols = height // patch, width // patch
    cropped = image[: n_rows * patch, : n_cols * patch]
    blocks = cropped.reshape(n_rows, patch, n_cols, patch, channels)
    blocks = blocks.transpose(0, 2, 1, 3, 4)  # -> [n_rows, n_cols, patch, patch, C]
    return blocks.reshape(n_rows * n_cols, patch * patch * channels), (n_rows, n_cols)


def unpatchify(patches, grid, patch):
    """Reassemble patches into the (cropped) image; inverse of :func:`patchify`.

    Parameters
    ----------
    patches : ndarray of shape (n_rows · n_cols, patch · patch · C)
    grid : tuple (n_rows, n_cols)
    patch : int

    Returns
    -------
    ndarray of shape (n_rows · patch, n_cols · patch, C)
    """
    n_rows, n_cols = grid
    patches = np.asarray(patches)
    channels = patches.shape[1] // (patch * patch)
    blocks = patches.reshape(n_rows, n_cols, patch, patch, channels)
    blocks = blocks.transpose(0, 2, 1, 3, 4)  # -> [n_rows, patch, n_cols, patch, C]
    return blocks.reshape(n_rows * patch, n_cols * patch, channels)


def patch_embedding(patches, d_model, seed):
    r"""The linear patch embedding of ViT (Dosovitskiy et al. 2020, eq. 1), seeded.

    .. math:: z_p = x_p E, \qquad E \in \mathbb{R}^{(P^2 C) \times D},\quad
              E_{ij} \sim \mathcal{N}(0,\, 1/(P^2 C))

    The variance keeps each feature on the scale of the pixels. The generator is
    seeded by ``(seed, P²C, d_model)``, so one seed gives one E per patch size.

    Parameters
    ----------
    patches : ndarray of shape (n_patches, P·P·C), pixels scaled to [-1, 1]
    d_model : int
    seed : int

    Returns
    -------
    ndarray of shape (n_patches, d_model)
    """
    patches = np.asarray(patches, dtype=np.float64)
    d_patch = patches.shape[1]
    rng = np.random.default_rng([int(seed), d_patch, int(d_model)])
    projection = rng.standard_normal((d_patch, d_model)) / np.sqrt(d_patch)
    return patches @ projection  # [n_patches, P²C] @ [P²C, d_model] -> [n_patches, d_model]


def patch_positions(grid, d_model, kind="2d"):
    """Fixed sinusoidal position embeddings for a grid of patches.

    "2d": the first ``d_model // 2`` features are the sinusoidal encoding of the
    patch's row, the rest that of its column, so patches in one row share half their
    code. "1d": the sinusoidal encoding of the raster index ``r · n_cols + c``, as for a
    sentence. "none": zeros, and attention cannot tell where a patch is.

    Parameters
    ----------
    grid : tuple (n_rows, n_cols)
    d_model : int
    kind : {"2d", "1d", "none"}

    Returns
    -------
    ndarray of shape (n_rows · n_cols, d_model)
    """
    n_rows, n_cols = grid
    if kind == "none":
        return np.zeros((n_rows * n_cols, d_model))
    if kind == "1d":
        return sinusoidal_positional_encoding(n_rows * n_cols, d_model)
    if kind != "2d":
        raise ValueError(f"unknown position kind {kind!r}; choose one of {', '.join(POSITIONS)}")
    d_row = d_model // 2
    rows = sinusoidal_positional_encoding(n_rows, d_row)  # [n_rows, d_row]
    cols = sinusoidal_positional_encoding(n_cols, d_model - d_row)  # [n_cols, d_model - d_row]
    return np.concatenate(
        [np.repeat(rows, n_cols, axis=0), np.tile(cols, (n_rows, 1))], axis=1
    )  # -> [n_rows · n_cols, d_model]


class VisionRun(NamedTuple):
    """One self-attention pass over an image's patches, with what the page draws.

    Attributes
    ----------
    grid : tuple (n_rows, n_cols)
    patch : int
    patches : ndarray of shape (n_patches, P·P·C), pixels in [-1, 1]
    embeddings : ndarray of shape (n_patches, d_model)
    positions : ndarray of shape (n_patches, d_model)
    weights : ndarray of shape (n_patches, n_patches), rows sum to 1
    output : ndarray of shape (n_patches, d_model)
    """

    grid: tuple
    patch: int
    patches: np.ndarray
    embeddings: np.ndarray
    positions: np.ndarray
    weights: np.ndarray
    output: np.ndarray


@blas.one_thread
def run_vision(image, patch, d_model, seed, position="2d", tied=False):
    """Patchify, embed, add positions, and run one head of self-attention over the patches.

    Pixels are scaled to [-1, 1] (ViT's ``(x - 0.5) / 0.5``). The attention layer is
    the toy model's (:func:`engine.toy.toy_weights`, one head, scale ``1/√d_model``).

    Parameters
    ----------
    image : ndarray of shape (H, W, C) or (H, W), uint8 (0–255) or float (0–1)
    patch : int
    d_model : int
    seed : int
    position : {"2d", "1d", "none"}
    tied : bool
        Use W_Q for the keys too, so the score ``q·k = (x W_Q)·(x′ W_Q)`` is a
        similarity of the patches' projections; with separate random W_Q, W_K it is an
        arbitrary bilinear form.

    Returns
    -------
    VisionRun
    """
    image = _as_hwc(image)
    pixels = image / 255.0 if np.issubdtype(image.dtype, np.integer) else image.astype(np.float64)
    patches, grid = patchify(pixels * 2.0 - 1.0, patch)  # [n_patches, P²C], pixels in [-1, 1]
    embeddings = patch_embedding(patches, d_model, seed)
    positions = patch_positions(grid, d_model, position)
    w_q, w_k, w_v, w_o = toy_weights(d_model, seed)
    result = multi_head_attention(embeddings + positions, w_q, w_q if tied else w_k, w_v, w_o, 1)
    return VisionRun(grid, patch, patches, embeddings, positions, result.weights[0], result.output)


def attention_overlay(weights_row, grid, patch):
    """One query patch's attention spread over the pixels of the (cropped) image.

    Every pixel of patch p gets the weight the query gives p.

    Parameters
    ----------
    weights_row : ndarray of shape (n_rows · n_cols,)
    grid : tuple (n_rows, n_cols)
    patch : int

    Returns
    -------
    ndarray of shape (n_rows · patch, n_cols · patch)
    """
    n_rows, n_cols = grid
    weights = np.asarray(weights_row).reshape(n_rows, n_cols)
    return np.repeat(np.repeat(weights, patch, axis=0), patch, axis=1)


def sample_image(size=224, seed=0):
    """A deterministic test card: a soft gradient with two red discs and two squares.

    One shape per quadrant, jittered by the seed, so shapes never overlap. Flat
    colours make patch attention easy to read: patches inside one shape, or inside
    the two discs of the same colour, differ only in their position.

    Parameters
    ----------
    size : int, side in pixels
    seed : int, jitters the shapes' places and sizes

    Returns
    -------
    uint8 ndarray of shape (size, size, 3)
    """
    rng = np.random.default_rng([int(seed), int(size)])
    y, x = np.mgrid[0:size, 0:size] / max(size - 1, 1)  # [size, size] each, in [0, 1]
    image = np.stack([0.18 + 0.25 * x, 0.22 + 0.3 * y, 0.35 + 0.2 * (1 - x)], axis=-1)
    red, yellow, white = (0.90, 0.20, 0.15), (0.98, 0.80, 0.10), (0.95, 0.95, 0.95)
    shapes = (("disc", red), ("square", yellow), ("square", white), ("disc", red))
    quadrants = ((0.25, 0.25), (0.25, 0.75), (0.75, 0.25), (0.75, 0.75))  # (y, x) centres
    for (kind, colour), (qy, qx) in zip(shapes, quadrants, strict=True):
        radius = rng.uniform(0.10, 0.15)
        cy, cx = np.array([qy, qx]) + rng.uniform(-0.05, 0.05, size=2)  # stays in its quadrant
        if kind == "disc":
            inside = (y - cy) ** 2 + (x - cx) ** 2 <= radius**2
        else:
            inside = (np.abs(y - cy) <= radius) & (np.abs(x - cx) <= radius)
        image = np.where(inside[:, :, None], colour, image)
    return np.round(image * 255).astype(np.uint8)
