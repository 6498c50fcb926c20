"""Attention: raw scores, scaling, softmax, weights and output, with the scale as a live control."""

import pandas as pd
import streamlit as st

from app import arithmetic, compute, controls, equations, figures, live, render, state, tables

st.title("Scores → softmax → weights → output")
st.latex(equations.ATTENTION)
st.caption(
    ("Scaling" if render.presenting() else "Drag the scale")
    + ": small values flatten every row toward uniform, large ones make each row one-hot "
    "on its largest score. The panel below measures it."
)

settings, tokenization, run = controls.layer_run()
labels = tokenization.labels
head = controls.shared_head(run)
st.caption(controls.weights_note(settings, head))
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
    values = state.current()
    head = values["head"] if settings.trained else state.DEFAULT_HEAD
    pair = compute.random_and_trained(
        settings.text, values["layer"], values["seed"], None, values["causal"]
    )
    if pair is None:
        st.info("MiniLM cannot read this text; shorten it to compare.")
        return
    labels, untrained, trained = pair[0], pair[1][head], pair[2][head]
    query = st.session_state.get("attention_query") if settings.trained else None
    if query is None or query >= len(labels):
        query = controls.find_token(labels, "it")
    trained_name = f"MiniLM, layer {values['layer']}, head {head}"
    st.caption(
        f"Row “{labels[query]}”: the random weights put their largest share, "
        f"{untrained[query].max():.3f}, on “{labels[untrained[query].argmax()]}”; "
        f"{trained_name} puts {trained[query].max():.3f} on "
        f"“{labels[trained[query].argmax()]}”. Both at the scale 1/√32, whatever the slider "
        "below says."
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


if state.MINILM is not None:
    random_against_trained()


@st.fragment
def scaled_view():
    """The scale slider and every figure it alone drives, rerun together on release."""
    frame_id, frames = compute.scale_frames(settings, head)
    controls.scale_slider(frames)
    now = settings.replace(scale=st.session_state["scale"])
    run_now = compute.layer(now)
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
    scales, sweep, rows = compute.saturation_curve(now, head)
    default = state.default_scale(*state.model_shape(state.current()))
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
        query = controls.token_picker("attention_query", labels, prefer="it", url="query")
        render.chart(
            st,
            figures.weights_bar(weights[query], labels, labels[query]),
            key="att_bar",
            table=tables.weights_row(weights[query], labels),
            live=live.follow(live.SOURCE, frame_id, bar="weights", row=query),
        )
    state.write_url()


scaled_view()
