"""The scale slider that lives in the browser: every stop's frames, packed, and the bindings.

For the current text and settings the engine computes attention at every stop of the
scale grid in one call (:func:`engine.attention.attention_over_scales`); :func:`pack`
turns the frames into one compact binary message, and :func:`bundle` puts several in one
element: a section sends, in every run, the layer's heads at the stop with the head in
every layer and unmasked and masked there before its charts, and every stop's frames of
the head shown after them
(:mod:`app.live.section`): Streamlit resends unchanged data as a reference. While the
slider is dragged the browser only switches between frames (indexing and colour
mapping); on release the stop goes back to Python. With float32 frames the browser draws
the exact figures of any stop itself, and the charts' data do not depend on the stop;
with 16-bit frames Python draws them. Above :data:`MAX_TOKENS` the browser holds the
frames of the current stop and its neighbours, one stop per message
(:func:`app.live.slider.send_stop_frames`); past :data:`MAX_BYTES` no frames are sent and
the charts update in place from the server on release.
"""

from __future__ import annotations

import hashlib
import json
import struct

import numpy as np

import engine
from app.views import heatmap, numbers, style
from app.widgets import channel

#: The attention page's scale slider: its key, and the name its charts follow.
SOURCE = channel.SOURCE
#: Above this many tokens frames stop paying: n² per stop, 81 stops.
MAX_TOKENS = 128
#: The head whose numbers the figures the browser draws from frames are drawn with: their
#: data are then the same for every head and stop, and the browser puts in the numbers of
#: the head and stop shown (:mod:`app.live.heads`).
REFERENCE_HEAD = 0
#: The most one text or settings change may send.
MAX_BYTES = 4 * 1024 * 1024
#: 16-bit fixed point: 65535 codes a gap (a masked cell), 0–65534 span [lo, hi].
_GAP = 65535
#: The weights colour scale at 256 steps, for the bars' colours while dragging.
WEIGHT_COLORS = style.weight_colors(np.linspace(0.0, 1.0, 256))


def _fixed16(array):
    """An array as 16-bit codes over its finite range, with the range."""
    finite = np.isfinite(array)
    lo = float(array[finite].min()) if finite.any() else 0.0
    hi = float(array[finite].max()) if finite.any() else 1.0
    span = (hi - lo) or 1.0
    codes = np.full(array.shape, _GAP, dtype="<u2")
    codes[finite] = np.round((array[finite] - lo) / span * (_GAP - 1)).astype("<u2")
    return codes, lo, hi


def pack(
    source,
    arrays,
    scales,
    titles,
    limits,
    labels=None,
    first=0,
    frame_id=None,
    texts=None,
    extra=None,
):
    """The frames as one binary message.

    Layout: a little-endian uint32 header length, the header as UTF-8 JSON, zero padding
    to a multiple of 8, then each array in C order, each padded to a multiple of 8. An
    array with cells that are the same in every frame (a causal mask's) has ``fixed``:
    ``mask``, the offset of a uint8 mask over one frame's cells in C order, 1 at those;
    ``values``, the offset of their values (the array's dtype, in order); ``kept``, the
    count of the others, which alone each frame then holds, in order. Arrays are float32
    when all of them fit in :data:`MAX_BYTES`, less the header's room
    (:data:`_HEADER_ROOM`), so, else 16-bit fixed point (``"u2"``, with ``lo`` and
    ``hi`` in the header).

    Parameters
    ----------
    source : str, the slider's key (which charts follow these frames)
    arrays : dict of str to ndarray of shape (n_s, ...)
    scales : ndarray of shape (n_s,)
    titles : list of n_s str, each stop's scale as the figures' titles write it
    limits : dict of str to ndarray of shape (n_s,), colour limits per stop: the colour
        scale spans ± the limit, and its colour bar is labelled at
        :func:`app.views.style.colorbar_ticks`
    labels : list of n_s str, optional, each stop as the slider shows it
    first : int, the slider's stop of the first frame (the frames hold stops
        ``first`` to ``first + n_s - 1``; 0 for the whole grid)
    frame_id : str, optional, the name charts follow; by default a digest of the frames
    texts : dict of str to nested lists of str, optional, arrays' values as the tables
        write them (:func:`app.views.numbers.table_texts`): what a table shows while the
        slider moves
    extra : dict, optional, more header fields: the head the frames are of (``head``),
        or for the layer's heads at one stop (:func:`head_frames`) ``axis`` and ``stop``

    Returns
    -------
    frame_id : str, the frames' name (charts name it to follow them)
    payload : bytes
        Both None when even 16 bits exceed :data:`MAX_BYTES` less the header's room.
    """
    # Sizes alone decide, with the header's room kept: every head of a layer, whose arrays
    # have the same shapes, is packed the same way (sweep_mode says how beforehand).
    values = sum(a.size for a in arrays.values())
    wide = _fits(values, 4)
    if not wide and not _fits(values, 2):
        return None, None
    blobs, described, offset = [], {}, 0

    def put(raw):  # the offset of ``raw`` in the body, padded to 8
        nonlocal offset
        blobs.append(raw + b"\0" * (-len(raw) % 8))
        offset += len(blobs[-1])
        return offset - len(blobs[-1])

    for name, array in arrays.items():
        if wide:
            blob, info = np.ascontiguousarray(array, dtype="<f4"), {"dtype": "f4"}
            blob = np.where(np.isfinite(blob), blob, np.nan).astype("<f4")
        else:
            blob, lo, hi = _fixed16(array)
            info = {"dtype": "u2", "lo": lo, "hi": hi}
        info["shape"] = list(array.shape)
        fixed = _fixed_cells(blob)
        if fixed is not None:  # those cells once, then each frame's other cells alone
            flat = blob.reshape(len(blob), -1)
            info["fixed"] = {
                "mask": put(fixed.astype("u1").tobytes()),
                "values": put(flat[0, fixed].tobytes()),
                "kept": int((~fixed).sum()),
            }
            blob = flat[:, ~fixed]
        described[name] = {**info, "offset": put(blob.tobytes())}
    body = b"".join(blobs)
    if frame_id is None:
        frame_id = hashlib.blake2b(body, digest_size=8).hexdigest()
    header = {
        "source": source,
        "id": frame_id,
        "first": first,
        "scales": [float(s) for s in scales],
        "titles": list(titles),
        "limits": {name: [float(x) for x in values] for name, values in limits.items()},
        "ticks": {
            name: [style.colorbar_ticks(x) for x in values] for name, values in limits.items()
        },
        "labels": labels,
        "arrays": described,
        "texts": texts or {},
        **(extra or {}),
    }
    text = json.dumps(header).encode()
    head = struct.pack("<I", len(text)) + text
    payload = head + b"\0" * (-len(head) % 8) + body
    return (frame_id, payload) if len(payload) <= MAX_BYTES else (None, None)


def _fixed_cells(blob):
    """The cells of ``blob`` (n_frames, ...) whose bits are the same in every frame.

    A causal mask's cells, 0 in the weights at every stop (NaN in the scaled scores):
    a flat boolean array over one frame's cells, or None when there is not more than
    one frame or sending them once would not save their mask's bytes. They are sent once,
    and each frame holds its other cells alone: at 128 tokens of a decoder the masked half
    of 81 stops of weights is 1.3 MB.
    """
    if blob.ndim < 2 or len(blob) < 2:
        return None
    bits = blob.reshape(len(blob), -1).view(f"<u{blob.itemsize}")
    fixed = (bits == bits[0]).all(axis=0)
    saved = fixed.sum() * (len(blob) - 1) * blob.itemsize - fixed.size  # less the mask
    return fixed if saved > 0 else None


def scale_title(scale):
    """A scale as the figures' titles write it."""
    return f"{scale:.4g}"


#: Room kept in :data:`MAX_BYTES` for the frames' header beside the arrays and table texts.
_HEADER_ROOM = 64 * 1024


def _fits(values, itemsize):
    """Whether ``values`` numbers of ``itemsize`` bytes fit beside the header's room."""
    return values * itemsize <= MAX_BYTES - _HEADER_ROOM


def sweep_mode(n_stops, n_q, n_k, n_out, constants=()):
    """How :func:`sweep_frames` packs a sweep of these sizes: ``(per_stop, in_browser)``.

    Sizes alone decide, so a page knows how its frames will travel before it makes any:
    ``in_browser`` when float32 frames with the scaled scores and saturation fit
    (:func:`drawn_in_browser`), ``per_stop`` when not even 16 bits of the weights and
    output do (:func:`pack` returns None). The arrays counted are
    :func:`_attention_arrays`'.

    Parameters
    ----------
    n_stops, n_q, n_k : int, the stops and each frame's queries and keys
    n_out : int, the output's columns (before the cut to the heatmap's feature limit)
    constants : sizes of the arrays sent once (a head's raw scores, its curves)
    """
    kept = n_q * n_k + n_q * min(n_out, heatmap.FEATURE_LIMIT)  # weights, output
    full = n_stops * (kept + n_q * n_k + 4 * n_q + 4) + sum(constants)  # scaled, saturation
    if _fits(full, 4):
        return False, True
    return not _fits(n_stops * kept, 2), False


def _attention_arrays(weights, scaled, output, constant=None):
    """The arrays the attention page's charts follow, by name, each with a leading frame axis.

    ``constant`` arrays are the same in every frame: they go in with a leading axis of 1
    (the browser reads frame 0 of an array whose first axis is 1). Returns the arrays,
    the tables' texts and the colour limits per frame.
    """
    output = output[..., : heatmap.FEATURE_LIMIT]
    stats = engine.saturation(weights)  # each field (n_f, n_q)
    per_row = np.stack(stats, axis=-1)  # [n_f, n_q, 4]
    arrays = {
        "weights": weights,
        "output": output,
        "scaled": scaled,
        "saturation": per_row,
        "saturation_mean": per_row.mean(axis=1, keepdims=True),  # [n_f, 1, 4]
    }
    arrays |= {name: np.asarray(a)[None] for name, a in (constant or {}).items()}
    if not _fits(sum(a.size for a in arrays.values()), 4):  # as pack decides
        for name in ("scaled", "saturation", "saturation_mean", *(constant or {})):
            del arrays[name]
    tables = [name for name in ("saturation", "saturation_mean") if name in arrays]
    texts = {name: numbers.table_texts(arrays[name]) for name in tables}
    size = sum(a.size for a in arrays.values()) * 4 + len(json.dumps(texts))
    if size > MAX_BYTES - _HEADER_ROOM:  # the tables then follow the exact figures alone
        texts = {}
    limits = {"output": np.max(np.abs(output), axis=(1, 2)), "scaled": _largest(scaled)}
    if "scores" in arrays:
        limits["scores"] = np.repeat(_largest(arrays["scores"]), len(weights))  # every frame
    return arrays, texts, limits


def _largest(array):  # [n_f, ...] -> [n_f], each frame's largest finite |value|
    finite = np.where(np.isfinite(array), np.abs(array), 0.0)
    return finite.max(axis=tuple(range(1, array.ndim)))


def sweep_frames(source, sweep, labels=None, first=0, frame_id=None, head=None, constant=None):
    """Pack an engine sweep for the attention page: weights, scaled scores, output, saturation.

    The scaled scores and each row's saturation (:func:`engine.saturation`, and its mean
    over the rows) go only into float32 frames: with them the browser draws every chart
    and table at any stop from the frames (the figures' numbers are the engine's float32 values).
    When float32 would pass :data:`MAX_BYTES` they are left out and the rest is packed in
    16 bits, too coarse for an exact figure: the charts are then drawn by the server on
    release, and the scaled scores' colours do not move with the scale anyway (their
    colour range is ± the largest scaled score), only its title does.

    Parameters
    ----------
    source : str
    sweep : engine.attention.ScaleSweep
    labels : list of str, optional, the slider's label of each stop (sent with the frames)
    first, frame_id : as :func:`pack` takes them
    head : int, optional, the head swept (in the header: the browser shows these frames
        while that head is the one shown)
    constant : dict of str to ndarray, optional, the head's arrays that do not depend on
        the scale (its raw ``scores``, its saturation ``curves``), sent once

    Returns
    -------
    frame_id, payload : as :func:`pack` returns them
    """
    arrays, texts, limits = _attention_arrays(sweep.weights, sweep.scaled, sweep.output, constant)
    return pack(
        source,
        arrays,
        sweep.scales,
        [scale_title(s) for s in sweep.scales],
        limits,
        labels,
        first,
        frame_id,
        texts,
        None if head is None else {"head": head},
    )


def head_frames(source, heads, scale, stop, frame_id, curves, axis="head", head=None):
    """Pack every head of a layer at one stop: the frames a head switch is painted from.

    Frame ``h`` is head ``h`` (the header says ``axis: "head"`` and the slider's ``stop``
    they are at): its weights, scaled scores, output, saturation and, as the scale's frames
    hold them once, its raw scores and saturation curves. With ``axis="layer"``, frame
    ``l`` is head ``head`` in layer ``l`` instead: what a layer switch is painted from;
    with ``axis="mask"``, frame 0 is head ``head`` unmasked and frame 1 masked: what a
    mask toggle is painted from.

    Parameters
    ----------
    source : str
    heads : engine.ScaleSweep whose leading axis is the head (scores of shape
        (n_heads, n_q, n_k) too), at ``scale``; with another axis, one head's along it
    scale : float, stop : int, the slider's stop
    frame_id : str, the layer's name, the same as its scale frames'; with another
        axis, the text's and settings' without the layer (or the mask)
    curves : ndarray of shape (n_frames, 3, n_points), each frame's saturation curves
    axis : "head", "layer" or "mask", what the frames' leading axis runs over
    head : int, with another axis than "head": the head the frames are of
    """
    arrays, texts, limits = _attention_arrays(heads.weights, heads.scaled, heads.output)
    arrays |= {"scores": heads.scores, "curves": curves}
    limits["scores"] = _largest(heads.scores)
    n_frames = len(heads.weights)
    extra = {"axis": axis, "stop": stop} | ({} if head is None else {"head": head})
    return pack(
        source,
        arrays,
        [scale] * n_frames,
        [scale_title(scale)] * n_frames,
        limits,
        frame_id=frame_id,
        texts=texts,
        extra=extra,
    )


#: The first bytes of several frames in one message (:func:`bundle`).
BUNDLE = b"AEFB"


def bundle(payloads):
    """Several packed frames (:func:`pack`) as one message; the Nones left out.

    Layout: ``AEFB``, a little-endian uint32 count, then each payload after its uint32 length.
    """
    kept = [payload for payload in payloads if payload is not None]
    sized = (struct.pack("<I", len(payload)) + payload for payload in kept)
    return BUNDLE + struct.pack("<I", len(kept)) + b"".join(sized)


def header(payload):
    """The JSON header of packed frames (:func:`pack`)."""
    (length,) = struct.unpack_from("<I", payload)
    return json.loads(payload[4 : 4 + length])


def drawn_in_browser(payload):
    """Whether the browser can draw the charts at every stop from these frames.

    True for float32 frames with the scaled scores (:func:`sweep_frames`): the charts then
    get one figure at a reference stop, the same whatever the stop, and the browser puts
    the current stop's frame into it. False without frames or with 16-bit ones.
    """
    if payload is None:
        return False
    arrays = header(payload)["arrays"]
    return "scaled" in arrays and all(a["dtype"] == "f4" for a in arrays.values())


def follow(source, frame_id, drawn=None, **binding):
    """The ``live`` part of a chart's data: follow ``source``'s frames.

    ``binding`` names what moves: ``title`` (its first line, with ``{scale}`` in it),
    ``heatmap`` (an array recolouring trace 0, with optional ``limits``: ± a per-stop
    limit), ``hover`` (``[[array, entry], ...]``: each array fills that entry of each cell of trace
    0's customdata, a gap written "" so that the figure's own text speaks for the cell),
    ``bar`` and ``row`` (one row of an array as the bars of trace 0, coloured with
    :data:`WEIGHT_COLORS`),
    ``markers`` (indices of shapes drawn at the current scale), ``columns`` (a table's
    columns from an array of shape (n_s, n_rows, n_columns): ``[array, first column]``),
    ``curves`` (an array of shape (n_s, n_lines, n_points): the y of line traces 0, 1, ...),
    ``stopless`` (True for a chart that shows the head alone, whatever the stop), ``head``
    (the head the figure is drawn at: while that head and its stop are shown, the browser
    draws the figure as it came, without waiting for new settings' frames).

    ``drawn`` is the index of the stop the figure was drawn at when it is a reference
    that the browser redraws at the current stop from the frames, before the server
    answers and after (:func:`drawn_in_browser`): the chart's data are then the same at
    every stop. None when the figure is the server's exact one at the current stop, which
    the frames only preview while the slider is dragged. Returns None without frames.
    """
    if frame_id is None:
        return None
    live = {"source": source, "frames": frame_id, **binding}
    if drawn is not None:
        live["drawn"] = drawn
    if "bar" in binding:
        live["colors"] = WEIGHT_COLORS
    return live
