"""The scale's frames: one head's attention swept over the slider's stops by the engine, packed.

Cached on the settings without the scale and on the head: every stop at once (up to
:data:`app.live.protocol.MAX_TOKENS` tokens), or one stop at a time past it.
"""

from __future__ import annotations

import hashlib

import numpy as np

import engine
from app.data import cache, layers
from app.live import protocol
from app.state import controls
from engine.attention import ScaleSweep


def scale_frames(settings, head):
    """One head's attention at every stop of the scale slider, packed for the browser.

    The frames do not depend on the current stop: they are cached without it, so a
    release at a new stop sends nothing new.

    Returns
    -------
    frame_id, payload : as :func:`app.live.protocol.pack` returns them; both None above
    :data:`app.live.protocol.MAX_TOKENS` tokens, where frames stop paying.
    """
    return _scale_frames(settings.replace(scale=None), head)


@cache.bounded
def _scale_frames(settings, head):
    run = layers.layer(settings)
    attention = run.attention
    if attention.q.shape[1] > protocol.MAX_TOKENS:
        return None, None
    scales = np.array(controls.scale_options(*settings.shape))
    sweep = engine.attention_over_scales(
        attention.q[head], attention.k[head], attention.v[head], scales, run.mask
    )
    labels = [controls.scale_label(scale, *settings.shape) for scale in scales]
    constant = {"scores": sweep.scores, "curves": _curves(settings, head)}
    return protocol.sweep_frames(
        protocol.SOURCE, sweep, labels, frame_id=layer_id(settings), head=head, constant=constant
    )


def frames_mode(settings):
    """How the scale's frames of every stop reach the browser: (per_stop, in_browser).

    ``per_stop``: past :data:`app.live.protocol.MAX_TOKENS` tokens (or past its size
    limit even in 16 bits) there are none (:func:`stop_frames` instead); ``in_browser``:
    they are float32 with the scaled scores (:func:`app.live.protocol.drawn_in_browser`).
    Sizes alone decide (:func:`app.live.protocol.sweep_mode`), and the sizes follow the
    text and the model's sizes only, the same for every head, layer and mask: no run, a
    new text's included, makes frames to find out (the slider asks for them once it is
    over).
    """
    attention = layers.layer(settings.replace(scale=None)).attention
    n = attention.q.shape[1]
    if n > protocol.MAX_TOKENS:
        return True, False
    n_stops = len(controls.scale_options(*settings.shape))
    constants = (n * n, 3 * layers.CURVE_POINTS)  # a head's raw scores and its curves
    return protocol.sweep_mode(n_stops, n, n, attention.v.shape[-1], constants)


def layer_id(settings):
    """The name the charts of a layer follow, whatever its head and scale: its frames' id.

    The scale's frames of any head and the layer's heads at a stop (:func:`head_frames`)
    share it, so a chart's data need not change when the head does.
    """
    return _name(settings.replace(scale=None))


def _name(key):
    """A short name for frames, from what they are of (a repr: settings, a head)."""
    return hashlib.blake2b(repr(key).encode(), digest_size=8).hexdigest()


def _curves(settings, head):  # [3, n_points]: the saturation curves the page draws
    stats = layers.saturation_curve(settings, head)[1]
    return np.stack([stats.entropy, stats.max_weight, stats.effective_tokens])


def head_frames(settings):
    """Every head of the layer at the current stop, packed: what a head switch paints from.

    Sent beside the scale's frames (of the head shown) when the browser draws every stop
    from them; a head chosen in the browser is shown from these at once
    (:func:`app.live.protocol.head_frames`). The numbers are the layer's own at the scale
    (:func:`app.data.layers.layer`), computed as the scale's frames compute them: the
    browser may draw a chart from either.

    Returns
    -------
    frame_id, payload : as :func:`app.live.protocol.pack` returns them
    """
    return _head_frames(settings)


@cache.bounded
def _head_frames(settings):
    run = layers.layer(settings.replace(scale=None))  # q, k, v and the mask: any scale's
    n_heads = run.attention.q.shape[0]
    heads = _along([_at_stop(run, head, settings.scale) for head in range(n_heads)], settings.scale)
    curves = np.stack([_curves(settings, head) for head in range(n_heads)])
    stop = controls.scale_options(*settings.shape).index(settings.scale)
    return protocol.head_frames(
        protocol.SOURCE, heads, settings.scale, stop, layer_id(settings), curves
    )


def _at_stop(run, head, scale):
    """One head of a layer's ``run`` swept over the stop ``scale`` alone.

    The same bits as its scale frames at the stop, whichever of the two the browser draws
    a chart from.
    """
    q, k, v = (getattr(run.attention, name)[head] for name in "qkv")
    return engine.attention_over_scales(q, k, v, np.array([scale]), run.mask)


def _along(one, scale):
    """One-stop sweeps (of heads, or of layers) as one sweep whose leading axis is theirs."""
    return ScaleSweep(
        np.full(len(one), scale),
        np.stack([sweep.scores for sweep in one]),
        *(np.concatenate([getattr(sweep, name) for sweep in one]) for name in _SWEPT),
    )


_SWEPT = ("scaled", "weights", "output")  # a sweep's fields with a leading stop axis


def layer_frames(settings, head):
    """Head ``head`` in every layer at the current stop, packed: what a layer switch paints from.

    Sent beside the layer's heads (:func:`head_frames`): a move of the sidebar's layer is
    shown from these at once, before its run. Each layer's numbers are computed as its
    head frames compute them, the same bits.

    Returns
    -------
    frame_id, payload : as :func:`app.live.protocol.pack` returns them
    """
    return _layer_frames(settings.replace(layer=0), head)


@cache.bounded
def _layer_frames(settings, head):  # settings at layer 0: one entry for every layer shown
    every = [settings.replace(layer=layer) for layer in range(settings.config.n_layers)]
    return _one_head_along(every, head, "layer", ("layers", settings.replace(scale=None)))


def _one_head_along(variants, head, axis, key):
    """Head ``head`` at the stop in each of ``variants`` (settings apart along ``axis``), packed.

    Named for ``key``, no variant's own name: no chart follows these frames. Each
    variant's numbers are computed as its head frames compute them, the same bits.
    """
    scale = variants[0].scale
    runs = [layers.layer(at.replace(scale=None)) for at in variants]  # any scale's
    along = _along([_at_stop(run, head, scale) for run in runs], scale)
    curves = np.stack([_curves(at, head) for at in variants])
    stop = controls.scale_options(*variants[0].shape).index(scale)
    return protocol.head_frames(protocol.SOURCE, along, scale, stop, _name(key), curves, axis, head)


def mask_frames(settings, head):
    """Head ``head`` at the current stop, unmasked and masked, packed: what a mask toggle shows.

    Sent beside the layer's heads (:func:`head_frames`): a click on the sidebar's "Mask
    future tokens" is shown from these at once, before its run. Frame 0 is the head without
    the causal mask, frame 1 with it, whichever ``settings.causal`` says, each computed
    as its head frames compute it (the same bits).

    Returns
    -------
    frame_id, payload : as :func:`app.live.protocol.pack` returns them
    """
    return _mask_frames(settings.replace(causal=False), head)


@cache.bounded
def _mask_frames(settings, head):  # settings unmasked: one entry for both states
    both = [settings.replace(causal=causal) for causal in (False, True)]
    return _one_head_along(both, head, "mask", ("mask", settings.replace(scale=None)))


def stop_frames(settings, head):
    """One head's attention at the current stop alone, packed like :func:`scale_frames`.

    Past :data:`app.live.protocol.MAX_TOKENS` tokens, where the frames of every stop stop paying,
    the browser holds the frames of the current stop and of its neighbours
    (:func:`app.live.slider.send_stop_frames`): it previews a stop over the heatmaps from them at
    once and then draws the exact figures, as from the frames of every stop. Their id is
    the same at every stop (it names the settings and the head), so the charts that follow
    them keep the same data from stop to stop.

    Returns
    -------
    frame_id, payload : as :func:`app.live.protocol.pack` returns them
    """
    return _stop_frames(settings, head)


@cache.bounded
def _stop_frames(settings, head):
    run = layers.layer(settings.replace(scale=None))  # q, k, v and the mask: any scale's
    options = controls.scale_options(*settings.shape)
    scale = controls.default_scale(*settings.shape) if settings.scale is None else settings.scale
    frame_id = _name((settings.replace(scale=None), head))
    return protocol.sweep_frames(
        protocol.SOURCE, _at_stop(run, head, scale), first=options.index(scale), frame_id=frame_id
    )
