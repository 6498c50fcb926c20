"""The scale slider that lives in the browser: every stop's frames, packed once, and the bindings.

For the current text and settings the engine computes attention at every stop of the
scale grid in one call (:func:`engine.attention.attention_over_scales`); :func:`pack`
turns the frames into one compact binary message that the page sends once per text or
settings change. While the slider is dragged the browser only switches between these
frames (indexing and colour mapping); on release the stop goes back to Python, which
draws the exact figures. Above :data:`MAX_TOKENS`, or past :data:`MAX_BYTES`, no frames
are sent and the charts update in place from the server on release.
"""

from __future__ import annotations

import hashlib
import json
import struct

import numpy as np
from plotly.colors import sample_colorscale

from app import figures

#: The attention page's scale slider: its key, and the name its charts follow.
SOURCE = "att_scale"
#: Above this many tokens frames stop paying: n² per stop, 81 stops.
MAX_TOKENS = 128
#: The most one text or settings change may send.
MAX_BYTES = 4 * 1024 * 1024
#: 16-bit fixed point: 65535 codes a gap (a masked cell), 0–65534 span [lo, hi].
_GAP = 65535
#: The weights colour scale at 256 steps, for the bars' colours while dragging.
WEIGHT_COLORS = sample_colorscale(figures.WEIGHTS_SCALE, np.linspace(0.0, 1.0, 256))


def _fixed16(array):
    """An array as 16-bit codes over its finite range, with the range."""
    finite = np.isfinite(array)
    lo = float(array[finite].min()) if finite.any() else 0.0
    hi = float(array[finite].max()) if finite.any() else 1.0
    span = (hi - lo) or 1.0
    codes = np.full(array.shape, _GAP, dtype="<u2")
    codes[finite] = np.round((array[finite] - lo) / span * (_GAP - 1)).astype("<u2")
    return codes, lo, hi


def pack(source, arrays, scales, titles, limits):
    """The frames as one binary message.

    Layout: a little-endian uint32 header length, the header as UTF-8 JSON, zero padding
    to a multiple of 8, then each array in C order. Arrays are float32 when all of them
    fit in :data:`MAX_BYTES` so, else 16-bit fixed point (``"u2"``, with ``lo`` and
    ``hi`` in the header).

    Parameters
    ----------
    source : str, the slider's key (which charts follow these frames)
    arrays : dict of str to ndarray of shape (n_s, ...)
    scales : ndarray of shape (n_s,)
    titles : list of n_s str, each stop's scale as the figures' titles write it
    limits : dict of str to ndarray of shape (n_s,), colour limits per stop

    Returns
    -------
    frame_id : str, a digest of the frames (charts name it to follow them)
    payload : bytes
        Both None when even 16 bits exceed :data:`MAX_BYTES`.
    """
    wide = sum(a.size for a in arrays.values()) * 4 <= MAX_BYTES
    blobs, described, offset = [], {}, 0
    for name, array in arrays.items():
        if wide:
            blob, info = np.ascontiguousarray(array, dtype="<f4"), {"dtype": "f4"}
            blob = np.where(np.isfinite(blob), blob, np.nan).astype("<f4")
        else:
            blob, lo, hi = _fixed16(array)
            info = {"dtype": "u2", "lo": lo, "hi": hi}
        raw = blob.tobytes()
        described[name] = {**info, "shape": list(array.shape), "offset": offset}
        blobs.append(raw + b"\0" * (-len(raw) % 8))
        offset += len(blobs[-1])
    body = b"".join(blobs)
    frame_id = hashlib.blake2b(body, digest_size=8).hexdigest()
    header = {
        "source": source,
        "id": frame_id,
        "scales": [float(s) for s in scales],
        "titles": list(titles),
        "limits": {name: [float(x) for x in values] for name, values in limits.items()},
        "arrays": described,
    }
    text = json.dumps(header).encode()
    head = struct.pack("<I", len(text)) + text
    payload = head + b"\0" * (-len(head) % 8) + body
    return (frame_id, payload) if len(payload) <= MAX_BYTES else (None, None)


def scale_title(scale):
    """A scale as the figures' titles write it."""
    return f"{scale:.4g}"


def sweep_frames(source, sweep):
    """Pack an engine sweep for the attention page: weights, and the output's shown columns.

    The scaled scores are not sent: their heatmap's colours do not move with the scale
    (its colour range is ± the largest scaled score), only its title does.

    Parameters
    ----------
    source : str
    sweep : engine.attention.ScaleSweep

    Returns
    -------
    frame_id, payload : as :func:`pack` returns them
    """
    output = sweep.output[..., : figures.FEATURE_LIMIT]
    limits = {"output": np.max(np.abs(output), axis=(1, 2))}
    return pack(
        source,
        {"weights": sweep.weights, "output": output},
        sweep.scales,
        [scale_title(s) for s in sweep.scales],
        limits,
    )


def follow(source, frame_id, **binding):
    """The ``live`` part of a chart's data: follow ``source``'s frames while it is dragged.

    ``binding`` names what moves: ``title`` (with ``{scale}`` in it), ``heatmap`` (an
    array recolouring trace 0, with optional ``limits``), ``bar`` and ``row`` (one row of
    an array as the bars of trace 0, coloured with :data:`WEIGHT_COLORS`), ``markers``
    (indices of shapes drawn at the current scale). None without frames.
    """
    if frame_id is None:
        return None
    live = {"source": source, "frames": frame_id, **binding}
    if "bar" in binding:
        live["colors"] = WEIGHT_COLORS
    return live
