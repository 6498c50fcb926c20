"""Attention: raw scores, scaling, softmax, weights and output, with the scale as a live control."""

import pandas as pd
import streamlit as st

from app import arithmetic, compute, equations, figures, render, tables, wording
from app.live import protocol, slider, sweeps
from app.state import controls, session
from app.widgets import notices, pickers

st.title("Scores → softmax → weights → output")
render.equation(equations.ATTENTION)
st.caption(
    "Drag the scale: small values flatten every row toward uniform, large ones make each row "
    "one-hot on its largest score. The panel below measures it."
)

settings, tokenization, run = notices.layer_or_stop()
labels = tokenization.labels
head = pickers.shared_head(run)
st.caption(notices.weights_note(settings, head))
left, right = st.columns(2)
render.chart(
    left,
    figures.scores_heatmap(run.attention.heads.scores[head], labels, "Raw scores q·kᵀ"),
    key="att_raw",
    table=tables.matrix_frame(run.attention.heads.scores[head], labels, labels),
)
del run  # the fragment below holds this page's globals for the session: not the run
render.equation(equations.SOFTMAX, right)
right.caption(
    "The raw scores do not depend on the scale; everything below the slider does, and "
    "redraws as it moves."
)


def random_against_trained():
    """MiniLM's head beside random weights of its shape on the same tokens, at its own scale."""
    if not st.toggle(
        "Random against trained: this head before and after training, side by side",
        key="attention_compare",
        help="The same tokens, sizes (384 features, 12 heads of 32), scale 1/√32 and mask; "
        "only training differs.",
        persist_state="session",
    ):
        return
    values = session.current()
    head = values["head"] if settings.trained else controls.DEFAULT_HEAD
    pair = compute.random_and_trained(
        settings.text, values["layer"], values["seed"], None, values["causal"]
    )
    if pair is None:
        st.info("MiniLM cannot read this text; shorten it to compare.")
        return
    labels, untrained, trained = pair[0], pair[1][head], pair[2][head]
    query = st.session_state.get("attention_query") if settings.trained else None
    if query is None or query >= len(labels):
        query = wording.default_query(labels)
    trained_name = f"MiniLM, {wording.layer_head(values['layer'], head)}"
    st.caption(
        wording.random_and_trained(labels, query, untrained[query], trained[query], trained_name)
        + " Both at the scale 1/√32, whatever the slider below says."
    )
    rows = {f"Random (seeded), head {head}": untrained[query], trained_name: trained[query]}
    render.chart(
        st,
        figures.weights_bars_compared(rows, labels, labels[query]),
        key="att_compare_bars",
        table=pd.DataFrame({"key": labels, **rows}),
    )
    left, right = st.columns(2)
    render.chart(
        left,
        figures.attention_heatmap(untrained, labels, f"Random (seeded), head {head}"),
        key="att_random",
        table=tables.matrix_frame(untrained, labels, labels),
    )
    render.chart(
        right,
        figures.attention_heatmap(trained, labels, trained_name),
        key="att_trained",
        table=tables.matrix_frame(trained, labels, labels),
    )


if controls.MINILM is not None:
    random_against_trained()


#: The fragments of the scale slider and of the charts that follow it, by key.
SLIDER, CHARTS = "attention_scale", "attention_charts"
frame_id, frames = sweeps.scale_frames(settings, head)
per_stop = frames is None  # past protocol.MAX_TOKENS: each release sends its own stop's frames
if per_stop:
    frame_id, frames = sweeps.stop_frames(settings, head)
in_browser = protocol.drawn_in_browser(frames)  # the browser draws the charts from the frames
if frames is not None and not per_stop:
    slider.send_frames(frames)
del frames  # as the run: the fragments below keep only what they need


def after_release():
    """A clicked cell's arithmetic is drawn here: rerun the charts' fragment to redo it."""
    if st.session_state.get("att_weights_cell") is not None:
        st.rerun([SLIDER, CHARTS])


@st.fragment(key=SLIDER)
def scale_control(data):
    """The scale slider alone: a release stores the stop and writes the URL, nothing else.

    Only when the browser draws the charts from the frames: the slider's
    ``data`` are those of the last full run, the same after a release, so Streamlit
    resends them as a reference. Past :data:`app.live.MAX_TOKENS` tokens the frames of
    the stop and of its neighbours come with it (:func:`app.controls.stop_frames`).
    """
    slider.scale_slider(data, on_release=after_release)
    if per_stop:
        slider.stop_frames(settings.replace(scale=st.session_state["scale"]), head)
    session.write_url()


if in_browser:
    scale_control(slider.scale_slider_data(with_labels=per_stop))


@st.fragment(key=CHARTS)
def scaled_view():
    """Every figure the scale slider drives, rerun together by a click on them.

    With float32 frames the browser draws the charts at every stop from the frames, so
    they get the figures at the default scale, the same data at every stop (Streamlit
    then sends a reference, not the figure), and the slider is a fragment of its own
    (:func:`scale_control`) whose release reruns nothing here, unless a cell's
    arithmetic is shown. Else the slider is here and a release reruns this fragment,
    which draws the server's exact figures at the stop. The CSV buttons build the
    engine's numbers at the stop current when they are clicked.
    """
    if not in_browser:
        slider.scale_slider(slider.scale_slider_data(with_labels=frame_id is None))
    now = settings.replace(scale=st.session_state["scale"])
    default = controls.default_scale(*settings.shape)
    drawn = controls.scale_options(*settings.shape).index(default) if in_browser else None
    drawn_scale = default if in_browser else now.scale
    # The figures' run: at the default scale when the browser draws every stop from the
    # frames (the cell's arithmetic needs only its q, k, v and mask), else at the stop.
    run = compute.layer(settings.replace(scale=None) if in_browser else now)
    heads = run.attention.heads
    scaled_title = f"Scaled scores × {protocol.scale_title(drawn_scale)}"
    held = slider.held_scale()

    def at_stop(table):
        """``table(heads)``, built when the CSV button is clicked, at the stop shown then."""
        return lambda: table(compute.layer(settings.replace(scale=held.scale)).attention.heads)

    left, right = st.columns(2)  # both rows in one pair of columns: fewer blocks per step
    scaled_figure = figures.scores_heatmap(heads.masked[head], labels, scaled_title)
    render.chart(
        left,
        scaled_figure,
        key="att_scaled",
        table=at_stop(lambda at: tables.matrix_frame(at.masked[head], labels, labels)),
        live=protocol.follow(
            protocol.SOURCE,
            frame_id,
            drawn,
            title="Scaled scores × {scale}",
            **({"heatmap": "scaled", "limits": "scaled"} if drawn is not None else {}),
        ),
    )
    click = render.chart(
        right,
        figures.attention_heatmap(
            heads.weights[head], labels, scores=heads.scores[head], scaled=heads.masked[head]
        ),
        key="att_weights",
        table=at_stop(lambda at: tables.matrix_frame(at.weights[head], labels, labels)),
        live=protocol.follow(
            protocol.SOURCE, frame_id, drawn, heatmap="weights", hover=["scaled", 1]
        ),
        clicks=True,
    )
    render.chart(
        left,
        figures.token_features_heatmap(heads.output[head], labels, "Output = weights · V"),
        key="att_output",
        table=at_stop(lambda at: tables.token_features(at.output[head], labels)),
        live=protocol.follow(protocol.SOURCE, frame_id, drawn, heatmap="output", limits="output"),
    )

    st.subheader("One weight, worked out")
    attention = run.attention
    arithmetic.panel(
        arithmetic.clicked_cell("att_weights", click, *heads.weights[head].shape),
        (attention.q[head], attention.k[head], attention.v[head]),
        now.scale,
        run.mask,
        labels,
    )

    st.subheader("Saturation")
    render.equation(equations.SATURATION)
    scales, sweep, rows = compute.saturation_curve(now, head)
    render.chart(
        st,
        figures.saturation_figure(scales, sweep, drawn_scale, default, rows),
        key="att_saturation",
        table=tables.saturation_curve(scales, sweep),
        live=protocol.follow(
            protocol.SOURCE, frame_id, drawn, markers=figures.CURRENT_SCALE_MARKERS
        ),
    )
    summary, per_row = tables.saturation_tables(heads.weights[head], labels)
    render.chart(
        st,
        figures.numbers_table(summary, height=64),
        key="att_saturation_mean",
        table=at_stop(lambda at: tables.saturation_tables(at.weights[head], labels)[0]),
        live=protocol.follow(protocol.SOURCE, frame_id, drawn, columns=["saturation_mean", 1]),
    )
    with st.expander("Per query row"):
        render.chart(
            st,
            figures.numbers_table(per_row),
            key="att_saturation_rows",
            table=at_stop(lambda at: tables.saturation_tables(at.weights[head], labels)[1]),
            live=protocol.follow(protocol.SOURCE, frame_id, drawn, columns=["saturation", 1]),
        )

    with right:
        query = pickers.token_picker(
            "attention_query", labels, default=wording.default_query(labels), url="query"
        )
        render.chart(
            st,
            figures.weights_bar(heads.weights[head][query], labels, labels[query]),
            key="att_bar",
            table=at_stop(lambda at: tables.weights_row(at.weights[head][query], labels)),
            live=protocol.follow(protocol.SOURCE, frame_id, drawn, bar="weights", row=query),
        )
    session.write_url()


scaled_view()
