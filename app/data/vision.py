"""Images for the vision page, and the attention over their patches, cached.

The shipped sample and checked uploads, and self-attention over an image's patches
(:func:`engine.vision.run_vision`), cached on the image's name, never on its pixels.

An upload is untrusted bytes. Before any pixel is decoded the file must be at most
:data:`MAX_BYTES`, open as PNG, JPEG or WebP (only those decoders are tried), and
declare at most :data:`MAX_SIDE` pixels on each side; Pillow's decompression-bomb
limit is lowered to the same pixel count as a second guard. Only then is it decoded,
turned upright (EXIF orientation), flattened onto white if it has transparency,
converted to RGB and shrunk to at most :data:`WORK_SIDE` pixels on its long side,
which is all the attention on the page needs; what is left must still be
:data:`MIN_SIDE` pixels on its short side. Every failure is an
:class:`ImageRejectedError` with a message for the user, never a traceback.
"""

from __future__ import annotations

import hashlib
import io
import warnings

import numpy as np
import streamlit as st
from PIL import Image, ImageOps, UnidentifiedImageError

from app.data import cache
from engine.resources import ASSETS
from engine.vision import run_vision

SAMPLE_PATH = ASSETS / "sample.png"
UPLOAD_TYPES = ("png", "jpg", "jpeg", "webp")
_FORMATS = ("PNG", "JPEG", "WEBP")
MAX_BYTES = 5 * 1024 * 1024
MAX_SIDE = 4096
#: Smaller images have too few patches to look at.
MIN_SIDE = 16
WORK_SIDE = 256

# Pillow warns above this many pixels and refuses above twice as many; the default is
# about 89 million. Lowered to what the page accepts (warnings are made errors below).
Image.MAX_IMAGE_PIXELS = MAX_SIDE * MAX_SIDE


#: Patch sizes the page offers; 16 is ViT's (Dosovitskiy et al. 2020: "16x16 words").
PATCH_SIZES = (8, 12, 14, 16, 28, 32, 56)


def patch_sizes(shape):
    """The patch sizes that leave at least a 2 × 2 grid on an image of ``shape`` (H, W, ...)."""
    return [p for p in PATCH_SIZES if p <= min(shape[:2]) // 2]


class ImageRejectedError(ValueError):
    """An upload the page will not use; ``str(error)`` is the message to show."""


def load_sample():
    """The sample image shipped in ``assets/sample.png``, uint8 (224, 224, 3)."""
    with Image.open(SAMPLE_PATH) as image:
        return np.asarray(image.convert("RGB"))


def load_upload(data, max_bytes=MAX_BYTES, max_side=MAX_SIDE, work_side=WORK_SIDE):
    """Check and decode uploaded bytes into an RGB array of at most ``work_side`` pixels.

    Parameters
    ----------
    data : bytes
    max_bytes, max_side, work_side : int

    Returns
    -------
    uint8 ndarray of shape (H, W, 3), MIN_SIDE <= min(H, W), max(H, W) <= work_side

    Raises
    ------
    ImageRejectedError
        With a message naming the limit broken, or saying the file is not an image.
    """
    if len(data) > max_bytes:
        raise ImageRejectedError(
            f"This file is {len(data) / 2**20:.1f} MB; the limit is {max_bytes / 2**20:.0f} MB."
        )
    if not data:
        raise ImageRejectedError("This file is empty.")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=_FORMATS) as image:  # reads the header only
                width, height = image.size
                if width > max_side or height > max_side:
                    raise ImageRejectedError(
                        f"This image is {width:,}×{height:,} pixels; the limit is "
                        f"{max_side:,}×{max_side:,}."
                    )
                image.draft("RGB", (work_side, work_side))  # JPEG: decode at a reduced size
                image.load()
                pixels = _working_copy(image, work_side)
    except ImageRejectedError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
        raise ImageRejectedError(
            f"This image declares more than {max_side:,}×{max_side:,} pixels and was not opened."
        ) from error
    except UnidentifiedImageError as error:
        raise ImageRejectedError(
            "This file is not a PNG, JPEG or WebP image (or it is damaged)."
        ) from error
    except (OSError, ValueError, SyntaxError) as error:  # truncated or corrupt pixel data
        raise ImageRejectedError(
            "This image could not be decoded: the file looks damaged or truncated."
        ) from error
    if min(pixels.shape[:2]) < MIN_SIDE:
        raise ImageRejectedError(
            f"This image is {width}×{height} pixels; the page needs at least {MIN_SIDE} "
            f"pixels on its short side (once the long side is at most {work_side})."
        )
    return pixels


def _working_copy(image, work_side):
    """Upright, RGB over white, long side at most ``work_side``; as a uint8 array."""
    image = ImageOps.exif_transpose(image)
    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        image = Image.alpha_composite(Image.new("RGBA", rgba.size, "white"), rgba)
    image = image.convert("RGB")
    image.thumbnail((work_side, work_side), Image.Resampling.LANCZOS)
    return np.asarray(image)


@st.cache_resource(show_spinner=False)
def sample_image():
    """The shipped sample image, uint8 (224, 224, 3), read-only."""
    return load_sample()


@cache.bounded
def _decoded_upload(digest, _data):
    try:
        return load_upload(_data), None
    except ImageRejectedError as error:
        return None, str(error)


def uploaded_image(data):
    """Check and decode uploaded bytes, cached on their SHA-256 (never on the array).

    Returns
    -------
    source : str, the digest, to key :func:`vision_run` on
    image : uint8 ndarray of shape (H, W, 3), or None when rejected
    problem : str or None, the message to show when rejected
    """
    digest = hashlib.sha256(data).hexdigest()
    image, problem = _decoded_upload(digest, data)
    return digest, image, problem


@cache.bounded
def vision_run(source, patch, d_model, seed, position, tied, _image):
    """Self-attention over the patches of the image named by ``source``.

    ``source`` ("sample" or an upload's digest) is the cache key; ``_image`` must be
    the image it names and is not hashed.

    Returns
    -------
    engine.vision.VisionRun
    """
    return run_vision(_image, patch, d_model, seed, position, tied)
