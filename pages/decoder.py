"""Decoder & cross-attention: a trained date translator, decoded one token at a time."""

import streamlit as st

import engine
from app.data import translator
from app.lecture.presentation import control_hint
from app.state import controls
from app.views import attention_maps, equation, heatmap
from app.widgets import pickers
from app.words import equations
from engine import seq2seq

DEFAULT_SOURCE = "the third of march 2021"
EXAMPLES = (
    "the third of march 2021",
    "march twenty-first 1999",
    "thirty-first of december 2099",
    "the first of january 1900",
    "september eleventh 1973",
    "the twenty-ninth of february 2024",
)
st.title("The decoder: masked self-attention and cross-attention")
st.caption(
    "A small encoder–decoder transformer, trained by this project to turn spelled-out dates "
    "into ISO form. It writes one character at a time: each step reads everything written "
    "so far through masked self-attention, and the source sentence through cross-attention."
)

model, problem = translator.translator()
if model is None:
    st.warning(controls.md_escape(problem))
    st.code(seq2seq.TRAIN_COMMAND, language="bash")
    st.stop()


def use_example():
    """Copy the picked example into the source box."""
    st.session_state["decoder_source"] = st.session_state["decoder_example"]


st.session_state.setdefault("decoder_source", DEFAULT_SOURCE)
left, right = st.columns([3, 2])
left.text_input(
    "Source: a date in words",
    key="decoder_source",
    max_chars=300,
    help="Day words “first” to “thirty-first”, month names, a year from 1900 to 2099.",
    persist_state="session",
)
right.selectbox("Examples", EXAMPLES, index=None, key="decoder_example", on_change=use_example)

translation, problem = translator.translation(st.session_state["decoder_source"])
if translation is None:
    st.info(
        controls.md_escape(problem)
        + control_hint(" Type a date such as “the third of march 2021”.")
    )
    st.stop()
if translation.unknown:
    st.warning(
        "The model never saw "
        + ", ".join(f"“{controls.md_escape(word)}”" for word in translation.unknown)
        + f" in training: it reads them as {controls.md_escape(seq2seq.UNK)}, so the "
        "translation below is a guess."
    )

st.subheader("Translation")
st.text("Source words:  " + "  ".join(translation.source))
st.code(translation.text or "(nothing)", language=None)
if not translation.finished:
    st.caption("Decoding stopped at the length limit before the end token.")

st.subheader("Step through the decoding")
equation.show(equations.GREEDY_DECODING)
st.caption(
    "Greedy decoding: each step writes the single most probable character. It is the "
    "simplest search, and the one this page runs; Vaswani et al. (2017, §6.1) decoded "
    "their translations with beam search instead (beam size 4, length penalty α = 0.6), "
    "keeping the best few partial outputs at every step."
)
n_steps = len(translation.steps)
if st.session_state.setdefault("decoder_step", 1) > n_steps:
    st.session_state["decoder_step"] = n_steps
step_number = st.slider(
    "Decoding step", 1, max(n_steps, 2), key="decoder_step", persist_state="session"
)
step = translation.steps[step_number - 1]
st.text(
    f"Step {step_number}: the decoder reads  {' '.join(step.inputs)}  →  writes  "
    f"{step.token}  (p = {step.probability:.3f})"
)

layer_column, head_column = st.columns(2)
with layer_column:
    layer = st.radio(
        "Layer",
        range(model.config.n_layers),
        horizontal=True,
        key="decoder_layer",
        persist_state="session",
    )
with head_column:
    head = pickers.head_picker("decoder_head", model.config.n_heads)

labels = list(step.inputs)
mask_column, self_column = st.columns([1, 2])
mask = engine.causal_mask(len(labels))
heatmap.show_mask(mask_column, "decoder_mask", mask, labels, "The mask at this step")
attention_maps.show_weights(
    self_column,
    "decoder_self",
    step.self_attention[layer, head],
    labels,
    f"Masked self-attention, layer {layer}, head {head}",
)
equation.show(equations.DECODER_SELF_ATTENTION)

st.subheader("Cross-attention: target × source")
equation.show(equations.CROSS_ATTENTION)
st.caption(
    "Y holds the decoder's t positions (the queries), H the encoder's output for the source "
    "words (the keys and values), so the weights form a t × n_src matrix, with no mask. "
    "Each row is a decoder position; each column a source word. "
    "The last row is the one whose output picks the next character: while the model writes "
    "the year it should look at the year, then at the month, then at the day."
)
#: The two cross-attention maps: weights from 0 to 1, source words across, the decoder down.
CROSS = {"diverging": False, "x_title": "source word (key)", "y_title": "decoder input (query)"}
heatmap.show(
    st,
    "decoder_cross",
    step.cross_attention[layer, head],
    labels,
    translation.source,
    f"Cross-attention at step {step_number}, layer {layer}, head {head}",
    **CROSS,
)
st.subheader("The whole alignment: the last step, averaged over heads")
final = translation.steps[-1]
heatmap.show(
    st,
    "decoder_alignment",
    final.mean_cross_attention[layer],
    list(final.inputs),
    translation.source,
    f"Mean over heads, layer {layer}",
    **CROSS,
)
