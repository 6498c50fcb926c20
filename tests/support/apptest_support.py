"""What the page tests share: the app opened through AppTest, and the figures it sent, read back.

A page is opened the way a visitor reaches it: the entry point ``app/main.py`` runs first
(it reads the link's query parameters and registers the pages), then the page runs. The
figures are read from the element protos the run sent, and Plotly's typed arrays
(base64 with a dtype) are decoded into NumPy arrays.
"""

import base64
import contextlib
import json
import logging
import struct
import threading
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

MAIN = str(Path(__file__).resolve().parents[2] / "app" / "main.py")
#: The pages driven by the shared toy-model controls (the book page has its own set-up).
TOY_PAGES = (
    "home",
    "attention",
    "causal_mask",
    "positional_encoding",
    "multi_head",
    "encoder_layer",
)


#: The link parameter that runs the core pages on the seeded random model.
RANDOM = {"weights": "random"}
#: The charts on /attention that the scale's frames drive, and with the raw scores (which
#: follow the head, not the scale) every chart drawn from the frames.
SCALE_CHARTS = (
    "att_scaled",
    "att_weights",
    "att_output",
    "att_bar",
    "att_saturation",
    "att_saturation_mean",
    "att_saturation_rows",
)
LIVE_CHARTS = ("att_raw", *SCALE_CHARTS)
#: Where Streamlit logs "missing ScriptRunContext!" (a logger that does not propagate).
CONTEXT_LOGGER = "streamlit.runtime.scriptrunner_utils.script_run_context"


@contextlib.contextmanager
def context_warnings():
    """The messages Streamlit logs about a missing script-run context in the block, as a list."""
    logger = logging.getLogger(CONTEXT_LOGGER)
    messages = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: messages.append(record.getMessage())
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)


def outside_a_script_run(function):
    """``function()`` in a thread of its own, as a download button's data are built on a click.

    Returns
    -------
    what ``function`` returned
    """
    result = []
    thread = threading.Thread(target=lambda: result.append(function()), name="click")
    thread.start()
    thread.join()
    return result[0]


def page_script(page):
    """The path of ``pages/<page>.py`` relative to the entry point, as ``switch_page`` takes it.

    Parameters
    ----------
    page : str
        The page's script name without ``.py`` (``"causal_mask"``, not its URL path).

    Returns
    -------
    str
    """
    return f"../pages/{page}.py"


def open_app(page="home", query=None, *, page_query=None, timeout=60, **session):
    """The app after the entry point's first run and then, unless it is ``"home"``, ``page``'s.

    Parameters
    ----------
    page : str
        The page's script name without ``.py`` (``"causal_mask"``, not its URL path).
        ``"home"`` is the default page, which the first run already shows.
    query : dict of str to str, optional
        Query parameters set before the first run, like those of a shared link: the
        entry point reads them into the shared state.
    page_query : dict of str to str, optional
        Query parameters set after the first run, just before ``page`` runs: only the
        page sees them arrive.
    timeout : float
        Seconds each run may take.
    **session
        Session-state values set before the first run.

    Returns
    -------
    AppTest
        After its last run.
    """
    at = AppTest.from_file(MAIN, default_timeout=timeout)
    at.query_params.update(query or {})
    for key, value in session.items():
        at.session_state[key] = value
    at.run()
    if page != "home":
        at.switch_page(page_script(page))
        at.query_params.update(page_query or {})
        at.run()
    return at


def chart_payloads(at):
    """What the last run sent each chart: the chart component's data, by the chart's key.

    Every chart is drawn by the app's chart component (``attention_explorer``); its data
    hold the figure as JSON (``spec``), the Plotly config (``config``) and, for charts
    that follow the scale while it is dragged, ``live``.

    Parameters
    ----------
    at : AppTest

    Returns
    -------
    dict of str to dict
    """
    payloads = {}
    for element in at.get("bidi_component"):
        if element.proto.WhichOneof("data") != "json":
            continue  # the scale's frames, sent as bytes
        data = json.loads(element.proto.json)
        if "spec" in data:
            payloads[element.proto.id.rsplit("-", 1)[-1]] = data
    return payloads


def scale_slider(at):
    """The scale slider's data as the last run sent it: ``labels`` of every stop, the ``value``.

    The slider is one of the browser's own controls (it plays the scale's frames in the
    browser); a test moves it as its release does, through ``at.session_state["scale"]``.
    """
    for element in at.get("bidi_component"):
        if element.proto.id.endswith("-att_scale") and element.proto.WhichOneof("data") == "json":
            return json.loads(element.proto.json)
    raise LookupError("no scale slider on this page")


def scale_shown(at):
    """The scale slider's current stop, as it labels it."""
    data = scale_slider(at)
    return data["labels"][data["value"]]


def charts(at):
    """The Plotly figures the last run sent, by their key, decoded from the element protos.

    Parameters
    ----------
    at : AppTest

    Returns
    -------
    dict of str to dict
        Each chart's figure spec (``data``, ``layout``), keyed by the chart's widget key.
    """
    return {key: json.loads(data["spec"]) for key, data in chart_payloads(at).items()}


def decode(array):
    """A Plotly typed array (base64 with its dtype) or plain list, as a NumPy array.

    Parameters
    ----------
    array : dict or list
        A typed array ``{"bdata": ..., "dtype": ..., "shape": ...}`` (``shape`` optional,
        a list or a comma-separated string), or a plain (nested) list of numbers.

    Returns
    -------
    ndarray
        With the typed array's dtype and shape; a plain list as float.
    """
    if isinstance(array, dict):
        data = np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
        shape = array.get("shape")
        if isinstance(shape, str):
            shape = [int(part) for part in shape.split(",")]
        return data.reshape(shape) if shape else data
    return np.asarray(array, dtype=float)


def chart_z(at, key, trace=0):
    """The ``z`` values one trace of the chart with widget key ``key`` shows, decoded.

    A heatmap drawn in the browser from the scale's float32 frames (its ``live`` names
    the stop its figure was ``drawn`` at) shows the frames' array at the slider's stop,
    not its figure's: that is what this returns for it (past 128 tokens the frames of
    that stop alone, among those of its neighbours).

    Parameters
    ----------
    at : AppTest
    key : str
        The chart's widget key.
    trace : int
        The trace's index in the figure's ``data``.

    Returns
    -------
    ndarray
    """
    live = chart_payloads(at)[key].get("live") or {}
    if trace == 0 and "drawn" in live and "heatmap" in live:
        stop = scale_slider(at)["value"]
        held = stop_frames(at)
        header, frames = held[stop] if held else scale_frames(at)
        return frames[live["heatmap"]][stop - header["first"]]
    return decode(charts(at)[key]["data"][trace]["z"])


def messages(at, kind):
    """The texts of every element of one kind the last run showed, in order.

    Parameters
    ----------
    at : AppTest
    kind : str
        An AppTest element list: ``"warning"``, ``"error"``, ``"info"``, ``"success"``, ...

    Returns
    -------
    list of str
    """
    return [m.value for m in getattr(at, kind)]


def unpack(payload):
    """The scale's frames (:func:`app.live.protocol.pack`) as their header and float arrays.

    Read independently of the browser's decoder: 16-bit codes are mapped back onto
    ``[lo, hi]``, gaps (masked cells) to NaN.
    """
    (length,) = struct.unpack("<I", payload[:4])
    header = json.loads(payload[4 : 4 + length])
    body = payload[4 + length + (-(4 + length) % 8) :]
    arrays = {}
    for name, info in header["arrays"].items():
        count = int(np.prod(info["shape"]))
        raw = _whole(body, info, count)
        values = raw.astype(float).reshape(info["shape"])
        if info["dtype"] == "u2":
            gaps = raw.reshape(info["shape"]) == 65535
            values = info["lo"] + values / 65534 * (info["hi"] - info["lo"])
            values[gaps] = np.nan
        arrays[name] = values
    return header, arrays


def _whole(body, info, count):
    """An array's values, the cells the same in every frame (``fixed``) put back."""
    dtype = np.dtype("<" + info["dtype"])
    if "fixed" not in info:
        return np.frombuffer(body, dtype=dtype, count=count, offset=info["offset"])
    fixed, n = info["fixed"], info["shape"][0]
    size = count // n
    mask = np.frombuffer(body, dtype="u1", count=size, offset=fixed["mask"]) == 1
    same = np.frombuffer(body, dtype=dtype, count=size - fixed["kept"], offset=fixed["values"])
    kept = np.frombuffer(body, dtype=dtype, count=n * fixed["kept"], offset=info["offset"])
    whole = np.empty((n, size), dtype=dtype)
    whole[:, mask] = same
    whole[:, ~mask] = kept.reshape(n, -1)
    return whole.ravel()


def unbundle(message):
    """The packed frames of one element (:func:`app.live.protocol.bundle`), read here."""
    assert message[:4] == b"AEFB", "frames come as a bundle"
    (count,) = struct.unpack_from("<I", message, 4)
    payloads, at = [], 8
    for _ in range(count):
        (length,) = struct.unpack_from("<I", message, at)
        payloads.append(message[at + 4 : at + 4 + length])
        at += 4 + length
    return payloads


def section_frames(at):
    """The live section's frames the last run sent, by what their leading axis runs over.

    ``{"stop": (header, arrays), "head": ..., "layer": ..., "mask": ...}``: every stop's
    frames of the head shown, the layer's heads at the stop, the head in every layer and
    unmasked and masked there (each only where the section sends it); empty without.
    """
    found = {}
    for element in at.get("bidi_component"):
        if element.proto.id.endswith(
            ("-att_scale_frames", "-att_scale_switch_frames", "-att_scale_sweep")
        ):
            for payload in unbundle(element.proto.bytes):
                header, arrays = unpack(payload)
                found[header.get("axis", "stop")] = header, arrays
    return found


def sent_scale_frames(at):
    """The scale's frames of every stop, if the last run sent them: ``(header, arrays)`` or None."""
    return section_frames(at).get("stop")


def scale_frames(at):
    """The scale's frames of every stop the last run sent: ``(header, arrays)`` (:func:`unpack`)."""
    sent = sent_scale_frames(at)
    if sent is None:
        raise LookupError("no scale frames on this page")
    return sent


def stop_frames(at):
    """Past 128 tokens, the frames of single stops the last run sent: stop -> (header, arrays)."""
    held = {}
    for element in at.get("bidi_component"):
        if "-att_scale_frames_" in element.proto.id:
            header, arrays = unpack(unbundle(element.proto.bytes)[0])
            held[header["first"]] = header, arrays
    return held


def move(at, state_key, value):
    """Move one of the browser's controls (layer, head, mask) as its report does, and run.

    The sidebar's "Layer ℓ", "Head h" and "Mask future tokens" are the chart component's
    (:mod:`app.widgets.channel`); their report's callback stores the value the browser
    shows, as this does, so the run takes it for the user's move, not Python's.
    """
    from app.widgets import channel

    known = dict(at.session_state[channel.KNOWN]) if channel.KNOWN in at.session_state else {}
    at.session_state[channel.KNOWN] = known | {state_key: value}
    at.session_state[state_key] = value
    return at.run()


def control(at, state_key, suffix="_control"):
    """The data the last run sent the sidebar's control of ``state_key`` (layer, head, causal).

    With ``suffix=""``, the control whose key is ``state_key`` (/attention's ``att_head``).
    """
    for element in at.get("bidi_component"):
        if element.proto.id.endswith(f"-{state_key}{suffix}"):
            return json.loads(element.proto.json)
    raise LookupError(f"no control of {state_key} in the sidebar")


def sidebar_controls(at):
    """The data of every one of the browser's controls in the sidebar (layer, head, mask)."""
    found = []
    for element in at.sidebar.get("bidi_component"):
        if element.proto.WhichOneof("data") == "json":
            data = json.loads(element.proto.json)
            if data.get("kind") == "control":
                found.append(data)
    return found


#: The clear trace that writes a heatmap's black numbers (app/views/style.py's TEXT_OVERLAY),
#: and the blank that stands for the other layer's number.
TEXT_OVERLAY, FIGURE_SPACE = "black text", "\u2007"


def cells_written(figure, index=0):
    """What heatmap ``index`` of ``figure`` writes in each cell, and in which colour.

    Its white numbers are its own text, its black ones a clear overlay's on the same axes
    (the first after it named :data:`TEXT_OVERLAY`); each layer has blanks where the other
    writes. ``figure`` is a plotly Figure or a chart's JSON as :func:`charts` decodes it.

    Returns
    -------
    list of lists of (text, colour), ("", "") where neither writes
    """

    def get(trace, name):  # a Figure's trace has every property, a JSON one those set
        return trace.get(name) if isinstance(trace, dict) else trace[name]

    data = list(figure["data"])
    trace = data[index]
    overlay = next(
        t
        for t in data[index + 1 :]
        if get(t, "name") == TEXT_OVERLAY
        and all(get(t, a) == get(trace, a) for a in ("xaxis", "yaxis"))
    )
    layers = [(layer["text"], layer["textfont"]["color"]) for layer in (trace, overlay)]
    cells = []
    for i, row in enumerate(layers[0][0]):
        cells.append([])
        for j in range(len(row)):
            shown = [(text[i][j], colour) for text, colour in layers]
            written = [(t, c) for t, c in shown if t.strip(FIGURE_SPACE)]
            assert len(written) <= 1, shown  # one layer writes each number
            assert len({len(t) for t, _ in shown}) == 1, shown  # the other as long, blank
            cells[-1].append(written[0] if written else ("", ""))
    return cells
