"""Attention: raw scores, scaling, softmax, weights and output, with the scale as a live control."""

import streamlit as st

from app import arithmetic, compute, controls, equations, figures, live, render, state, tables

st.title("Scores → softmax → weights → output")
st.latex(equations.ATTENTION)
st.caption(
    "Drag the scale: small values flatten every row toward uniform, large ones make each "
    "row one-hot on its largest score. The panel below measures it."
)

tokenization, run = controls.toy_run()
labels = tokenization.labels
head = controls.head_picker("attention_head", run.attention.weights.shape[0])
left, right = st.columns(2)
render.chart(
    left,
    figures.scores_heatmap(run.attention.heads.scores[head], labels, "Raw scores q·kᵀ"),
    key="att_raw",
    table=tables.matrix_frame(run.attention.heads.scores[head], labels, labels),
)
right.latex(equations.SOFTMAX)
right.caption(
    "The raw scores do not depend on the scale; everything below the slider does, and "
    "redraws as it moves."
)


@st.fragment
def scaled_view():
    """The scale slider and every figure it alone drives, rerun together on release."""
    values = state.current()
    frame_id, frames = compute.scale_frames(**state.layer_inputs(values), head=head)
    controls.scale_slider(frames)
    run_now = compute.toy(**state.model_inputs(values))
    heads = run_now.attention.heads
    scores, scaled = heads.scores[head], heads.scaled[head]
    weights, output = heads.weights[head], heads.output[head]

    left, right = st.columns(2)
    render.chart(
        left,
        figures.scores_heatmap(heads.masked[head], labels, f"Scaled scores × {heads.scale:.4g}"),
        key="att_scaled",
        table=tables.matrix_frame(heads.masked[head], labels, labels),
        live=live.follow(live.SOURCE, frame_id, title="Scaled scores × {scale}"),
    )
    click = render.chart(
        right,
        figures.attention_heatmap(weights, labels, scores=scores, scaled=scaled),
        key="att_weights",
        table=tables.matrix_frame(weights, labels, labels),
        live=live.follow(live.SOURCE, frame_id, heatmap="weights"),
        clicks=True,
    )
    left, right = st.columns(2)
    render.chart(
        left,
        figures.token_features_heatmap(output, labels, "Output = weights · V"),
        key="att_output",
        table=tables.token_features(output, labels),
        live=live.follow(live.SOURCE, frame_id, heatmap="output", limits="output"),
    )

    st.subheader("One weight, worked out")
    attention = run_now.attention
    arithmetic.panel(
        arithmetic.clicked_cell("att_weights", click, *weights.shape),
        (attention.q[head], attention.k[head], attention.v[head]),
        heads.scale,
        run_now.mask,
        labels,
    )

    st.subheader("Saturation")
    st.latex(equations.SATURATION)
    scales, sweep, rows = compute.saturation_curve(
        **state.layer_inputs(values),
        head=head,
    )
    default = state.default_scale(values["d_model"], values["heads"])
    render.chart(
        st,
        figures.saturation_figure(scales, sweep, heads.scale, default, rows),
        key="att_saturation",
        table=tables.saturation_curve(scales, sweep),
        live=live.follow(live.SOURCE, frame_id, markers=figures.CURRENT_SCALE_MARKERS),
    )
    summary, per_row = tables.saturation_tables(weights, labels)
    st.dataframe(summary, hide_index=True)
    with st.expander("Per query row"):
        st.dataframe(per_row, hide_index=True)

    with right:
        query = controls.token_picker("attention_query", labels, prefer="it")
        render.chart(
            st,
            figures.weights_bar(weights[query], labels, labels[query]),
            key="att_bar",
            table=tables.weights_row(weights[query], labels),
            live=live.follow(live.SOURCE, frame_id, bar="weights", row=query),
        )
    state.write_url()


scaled_view()
