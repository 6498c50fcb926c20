"""A real model: all-MiniLM-L6-v2's 6 layers × 12 heads, run in our own NumPy code."""

import streamlit as st

from app.data import minilm
from app.lecture.presentation import control_hint
from app.state import controls
from app.views import (
    arithmetic,
    attention_maps,
    bars,
    compare,
    equation,
    head_finder,
    line_view,
    model_view,
    neuron_view,
)
from app.widgets import compare_box, notices, pickers
from app.words import equations, minimal_pairs, wording
from engine import analysis, bert, checkpoint
from engine.attention import query_stages

st.title("A pretrained model: all-MiniLM-L6-v2")
st.caption(
    "A 6-layer, 12-head BERT-style encoder (22 M parameters), trained by others, run here "
    "by our own NumPy forward pass: no PyTorch. Its heads have learned relations between "
    "tokens: the head finder below ranks all 72 of them by the weight from one token of "
    "your text to another."
)

text = st.session_state["text"]
run = minilm.run(text)
if isinstance(run, checkpoint.ModelUnavailableError):
    notices.model_missing()
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
text_b = compare_box.text_box()
run_b = compare_box.second_run(text_b)
starts = minimal_pairs.start_tokens(text, labels)
query, key = pickers.query_and_key(compare_box.PICKERS_A, labels, starts, ("query", "key"))
grid = minilm.head_grid(text, query, key)
if run_b is None:
    head_finder.show(st, "pretrained_finder", grid, labels[query], labels[key])
    ranked = minilm.ranked_heads(text, query, key)
    st.markdown(wording.finder_answer(ranked, labels[query], labels[key]))
    st.dataframe(
        [{"layer": h.layer, "head": h.head, "weight": h.weight} for h in ranked[:8]],
        hide_index=True,
    )
    best = ranked[0]
else:
    labels_b = run_b.labels
    starts_b = minimal_pairs.start_tokens(text_b, labels_b, (labels[query], labels[key]))
    query_b, key_b = pickers.query_and_key(
        compare_box.PICKERS_B,
        labels_b,
        starts_b,
        ("query_b", "key_b"),
        ("B's query token", "B's key token"),
    )
    grid_b = minilm.head_grid(text_b, query_b, key_b)
    changes = analysis.rank_changes(grid, grid_b)
    pairs = (labels[query], labels[key]), (labels_b[query_b], labels_b[key_b])
    names = minimal_pairs.names(text, text_b)
    compare.show(st, "pretrained_compare", (grid, grid_b), pairs, names, changes)
    best = changes[0]

st.header("Head view")
left, right = st.columns(2)
layer = left.select_slider("Layer", range(n_layers), value=best.layer, key="pretrained_layer")
head = right.select_slider("Head", range(n_heads), value=best.head, key="pretrained_head")
weights = run.attentions[layer, head]
token = pickers.token_picker("pretrained_token", labels, label="From token", default=query)
left, right = st.columns(2)
bars.show(left, "pretrained_bar", weights[token, shown], labels[shown], labels[token])
click = attention_maps.show_weights(
    right,
    "pretrained_heatmap",
    weights[shown, shown],
    labels[shown],
    f"Layer {layer}, head {head}",
    clicks=True,
)
arithmetic.panel(
    arithmetic.clicked_cell("pretrained_heatmap", click, *weights[shown, shown].shape, shown),
    (run.queries[layer, head], run.keys[layer, head], None),
    None,  # the model's own 1/√d_head
    None,
    labels,
)

st.header("Line view")
st.caption(
    "BertViz's head view: each token on the left sends a line to every token on the right "
    "it attends to, one colour per head, darker and thicker for more weight. Point at a "
    "token to see only its lines (on the right, the lines into it); click it"
    + control_hint(", or pick it,")
    + " to keep them, and click it again for all."
)
heads, threshold = line_view.controls("pretrained_lines", n_heads, head)
sentences = [(run, "pretrained_lines", "A" if run_b else "")]
if run_b is not None:
    sentences.append((run_b, "pretrained_lines_b", "B"))
for column, (this, chart_key, name) in zip(st.columns(len(sentences)), sentences, strict=True):
    line_view.show_layer(
        column, chart_key, this, layer, heads, threshold, name, hide_special=hide_special
    )

st.header("Model view")
model_view.show(st, "pretrained_model_view", run.attentions, (layer, head))

st.header("Neuron view")
equation.show(equations.SOFTMAX)
stages = query_stages(run.queries[layer, head, token], run.keys[layer, head])
neuron_view.show(st, "pretrained_neuron", stages, run.keys[layer, head], labels, labels[token])

st.header("Attention rollout")
st.caption(
    "Abnar & Zuidema (2020, §3): average the heads of each layer, add the identity for "
    "the residual connection and renormalise each row, Â = ½(W̄ + I), then multiply the "
    "layers' Â together, to follow attention from the output back to the input tokens."
)
rollout = minilm.rollout(text)
attention_maps.show_weights(
    st, "pretrained_rollout", rollout[shown, shown], labels[shown], "Rollout through all 6 layers"
)
