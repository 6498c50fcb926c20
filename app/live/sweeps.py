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
    return protocol.sweep_frames(protocol.SOURCE, sweep, labels)


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
    run = layers.layer(
        settings.replace(scale=None)
    )  # q, k, v and the mask: the same at every scale
    attention = run.attention
    options = controls.scale_options(*settings.shape)
    scale = controls.default_scale(*settings.shape) if settings.scale is None else settings.scale
    sweep = engine.attention_over_scales(
        attention.q[head], attention.k[head], attention.v[head], np.array([scale]), run.mask
    )
    name = repr((settings.replace(scale=None), head)).encode()
    frame_id = hashlib.blake2b(name, digest_size=8).hexdigest()
    return protocol.sweep_frames(
        protocol.SOURCE, sweep, first=options.index(scale), frame_id=frame_id
    )
