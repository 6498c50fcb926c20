"""The scale's live section: the slider and every chart it drives, as a page asks for them.

The engine computes the current head's attention at every stop of the scale slider at
once (:mod:`app.live.sweeps`), and the browser holds those frames: while the slider is
dragged it only switches between them, and on release the stop comes back here. How
much the browser holds is decided here, from the frames' size: the layer's heads at the
stop in one element of the slider's fragment, before the charts (drawn from them); the
head in every layer and unmasked and masked there in one element of a fragment after the
charts (only a layer switch or a mask toggle needs them: the first screen does not wait for
them); and every stop's frames of the head shown in one element after those, all in every
run (the browser draws every chart at any stop and head from them; a release reruns the
two fragments of frames at the stop); past
:data:`app.live.protocol.MAX_TOKENS` tokens the frames of the current stop and its
neighbours, one stop a message; past
:data:`app.live.protocol.MAX_BYTES` none, and the server draws each stop's figures on
release. The charts are drawn in a fragment of their own, which a click on a weight
reruns to work out that cell's arithmetic.

What a fragment keeps between runs (its arguments) is :class:`Section`: small values,
never the layer's run or its frames, which stay in the cache.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import streamlit as st

from app.data import layers
from app.live import heads as live_heads
from app.live import protocol, slider, sweeps
from app.state import controls, session
from app.views import arithmetic, attention_maps, bars, chart, equation, heatmap, saturation
from app.widgets import channel, pickers
from app.words import equations, wording

#: The fragments of the scale slider, of the charts that follow it and of the frames a
#: layer switch or a mask toggle is shown from (at the stop: a release reruns it), by key.
SLIDER, CHARTS, SWITCHES = "attention_scale", "attention_charts", "attention_switches"


@dataclass(frozen=True)
class Section:
    """What the section's fragments keep between runs: the settings, the head, the frames' name.

    ``in_browser``: the browser draws every chart at any stop from the frames (float32
    frames with the scaled scores); ``per_stop``: it holds the frames of a few stops, sent
    by the slider's fragment as it moves.
    """

    settings: controls.Settings
    head: int
    labels: tuple[str, ...]
    frame_id: str | None
    per_stop: bool
    in_browser: bool


def scale_section(settings, head, labels):
    """The scale slider and every chart it drives, live in the browser while it moves.

    Parameters
    ----------
    settings : app.state.controls.Settings, the layer the page shows
    head : int, the head the charts show
    labels : sequence of str, the layer's tokens
    """
    per_stop, in_browser = sweeps.frames_mode(settings)
    frame_id = sweeps.layer_id(settings)
    if per_stop:  # past MAX_TOKENS: each release sends its own stop's frames
        frame_id, frames = sweeps.stop_frames(settings, head)
        in_browser = protocol.drawn_in_browser(frames)
    section = Section(settings, head, tuple(labels), frame_id, per_stop, in_browser)
    if in_browser:
        _slider(section)
    _charts(section)
    if in_browser and not per_stop:  # after the charts: only a move of a control needs them
        _switches(section)
        live_heads.send_sweep(settings, head)


#: The charts whose CSV follows the stop: their buttons' fragments rerun on a release.
CSVS = ("att_scaled", "att_weights", "att_output", "att_saturation_mean")
CSVS += ("att_saturation_rows", "att_bar")


def _after_release(section):
    """Rerun what says the stop: the slider's fragment, the switches' frames, the CSV buttons'.

    The CSV files' names say the stop; the switches' frames are at it (not past
    :data:`app.live.protocol.MAX_TOKENS` tokens, where none are sent). With a clicked cell,
    whose arithmetic is drawn with the charts, their fragment too.
    """
    at_stop = [SLIDER] if section.per_stop else [SLIDER, SWITCHES]
    if st.session_state.get("att_weights_cell") is not None:
        st.rerun([*at_stop, CHARTS])
    if not session.presenting():  # a slide has no CSV buttons
        st.rerun([*at_stop, *map(chart.csv_fragment, CSVS)])
    st.rerun(at_stop)


@st.fragment(key=SLIDER)
def _slider(section):
    """The scale slider alone: a release stores the stop and writes the URL, nothing else.

    Only when the browser draws the charts from the frames: the frames are resent as
    references, but for the layer's heads at the new stop. With frames of a few stops,
    those of the stop and its neighbours come here.
    """
    slider.scale_slider(on_release=functools.partial(_after_release, section))
    channel.catch_up()  # a control's move sent with the release
    if section.per_stop:
        at = section.settings.replace(scale=st.session_state["scale"])
        slider.send_stop_frames(at, section.head)
    else:  # what a head switch shows (a layer's or the mask's, and every stop's, come after)
        live_heads.send_frames(section.settings, section.head)
    session.write_url()


@st.fragment(key=SWITCHES)
def _switches(section):
    """The frames a layer switch and a mask toggle are shown from, at the stop, after the charts."""
    live_heads.send_switch_frames(section.settings, section.head)


class _Drawing:
    """One run of the charts' fragment: the run its figures come from, and their bindings.

    With frames the browser draws every stop from, the figures are drawn at the default
    scale and the reference head, the same data at every stop and head (Streamlit then
    sends a reference, not the figure; ``shown`` is the head drawn); else at the stop, the
    server's exact figures of the head. The CSV buttons build the engine's
    numbers at the stop current when they are clicked.
    """

    def __init__(self, section):
        settings = section.settings
        self.section = section
        self.now = settings.replace(scale=st.session_state["scale"])
        self.default = controls.default_scale(*settings.shape)
        options = controls.scale_options(*settings.shape)
        self.drawn = options.index(self.default) if section.in_browser else None
        self.drawn_scale = self.default if section.in_browser else self.now.scale
        # Frames of every stop hold the head's constant arrays, and the layer's heads go beside
        # them: the figures are then drawn at the reference head (app.live.heads).
        self.live_head = section.in_browser and not section.per_stop
        self.shown = protocol.REFERENCE_HEAD if self.live_head else section.head
        # The cell's arithmetic needs only the run's q, k, v and mask: the same at any stop.
        self.run = layers.layer(settings.replace(scale=None) if section.in_browser else self.now)
        self.heads = self.run.attention.heads
        self._held = slider.held_scale()

    def follow(self, **binding):
        """The binding of a chart to the scale's frames (:func:`app.live.protocol.follow`)."""
        frame_id, drawn = self.section.frame_id, self.drawn
        return protocol.follow(protocol.SOURCE, frame_id, drawn, head=self.shown, **binding)

    def at_stop(self, table):
        """``table(heads)``, built when the CSV button is clicked, at the stop shown then."""
        settings, held = self.section.settings, self._held
        return lambda: table(layers.layer(settings.replace(scale=held.scale)).attention.heads)


@st.fragment(key=CHARTS)
def _charts(section):
    """Every figure the scale slider drives, rerun together by a click on them.

    Without frames the browser can draw every stop from, the slider is here, and a release
    reruns this fragment, which draws the server's exact figures at the stop.
    """
    if not section.in_browser:
        slider.scale_slider()
    view = _Drawing(section)
    left, right = st.columns(2)  # both rows in one pair of columns: fewer blocks per step
    click = _matrices(view, left, right)
    st.subheader("One weight, worked out")
    head, attention = section.head, view.run.attention
    arithmetic.panel(
        arithmetic.clicked_cell("att_weights", click, *view.heads.weights[head].shape),
        (attention.q[head], attention.k[head], attention.v[head]),
        view.now.scale,
        view.run.mask,
        list(section.labels),
    )
    _saturation(view)
    with right:
        _row(view)
    session.write_url()


def _matrices(view, left, right):
    """The scaled scores, the weights (clicks open a cell) and the output; returns the click."""
    head, shown, heads = view.section.head, view.shown, view.heads
    labels = list(view.section.labels)
    recoloured = {"heatmap": "scaled", "limits": "scaled"} if view.drawn is not None else {}
    attention_maps.show_scores(
        left,
        "att_scaled",
        heads.masked[shown],
        labels,
        f"Scaled scores × {protocol.scale_title(view.drawn_scale)}",
        csv=view.at_stop(lambda at: heatmap.table(at.masked[head], labels, labels)),
        live=view.follow(title="Scaled scores × {scale}", **recoloured),
    )
    click = attention_maps.show_weights(
        right,
        "att_weights",
        heads.weights[shown],
        labels,
        scores=heads.scores[shown],
        scaled=heads.masked[shown],
        csv=view.at_stop(lambda at: heatmap.table(at.weights[head], labels, labels)),
        live=view.follow(heatmap="weights", hover=_hover(view)),
        clicks=True,
    )
    heatmap.show_features(
        left,
        "att_output",
        heads.output[shown],
        labels,
        "Output = weights · V",
        csv=view.at_stop(lambda at: heatmap.features_table(at.output[head], labels)),
        live=view.follow(heatmap="output", limits="output"),
    )
    return click


def _hover(view):
    """Which frames fill the weights' hover: the raw scores too when they follow the head."""
    return attention_maps.HOVER_FRAMES[: 2 if view.live_head else 1]


def _curves(view):
    """The saturation curves follow the head shown when the figure is drawn at the reference."""
    return {"curves": "curves"} if view.live_head else {}


def _saturation(view):
    """The saturation curves, their marker at the stop, and the tables at the stop."""
    head, labels, weights = view.section.head, list(view.section.labels), view.heads.weights
    st.subheader("Saturation")
    equation.show(equations.SATURATION)
    scales, sweep, rows = layers.saturation_curve(view.now, view.shown)
    saturation.show(
        st,
        "att_saturation",
        scales,
        sweep,
        view.drawn_scale,
        view.default,
        rows,
        n_keys=len(labels),
        csv=saturation.curve_table(*layers.saturation_curve(view.now, head)[:2]),
        live=view.follow(markers=saturation.CURRENT_SCALE_MARKERS, **_curves(view)),
    )

    def table(key, per_row, column):  # the means, or each row's: the frames' ``column``
        saturation.show_table(
            st,
            key,
            weights[view.shown],
            labels,
            per_row,
            csv=view.at_stop(lambda at: saturation.tables(at.weights[head], labels)[per_row]),
            live=view.follow(columns=[column, 1]),
        )

    table("att_saturation_mean", False, "saturation_mean")
    with st.expander("Per query row"):
        table("att_saturation_rows", True, "saturation")


def _row(view):
    """One query's weights as bars, the query picked beside them (a link parameter)."""
    head, labels = view.section.head, list(view.section.labels)
    query = pickers.token_picker(
        "attention_query", labels, default=wording.default_query(labels), url="query"
    )
    bars.show(
        st,
        "att_bar",
        view.heads.weights[view.shown][query],
        labels,
        labels[query],
        query=query,
        csv=view.at_stop(lambda at: bars.table(at.weights[head][query], labels)),
        live=view.follow(bar="weights", row=query),
    )
