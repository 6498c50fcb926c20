"""Summarize: the central sentences by LexRank on an encoder, and the attention between them."""

import streamlit as st

from app.data import documents
from app.lecture.presentation import control_hint
from app.state import controls, session
from app.views import sentences as sentence_views
from app.widgets import model_box, notices, pickers
from app.words import summary, wording
from engine import bert, checkpoint
from engine import summarize as method

st.title("Summarize: a document's central sentences")
folder, model = model_box.encoder()
st.caption(
    f"{model_box.title(folder)} turns each sentence into one vector; sentences whose vectors point "
    "the same way are similar, and LexRank (Erkan & Radev 2004) ranks each sentence by how "
    "similar it is to other central sentences. The summary is the k most central "
    "sentences, in the document's order. Below, the same model reads the whole document "
    "at once: does its attention flow to the sentences LexRank picks?"
)


def use_document():
    """The document is the shared text: links and the other pages carry it."""
    st.session_state["text"] = st.session_state["summarize_text"]


st.session_state["summarize_text"] = documents.document(st.session_state["text"])
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

ranking = documents.rank(doc, folder)
if isinstance(ranking, checkpoint.ModelUnavailableError):
    notices.model_missing()
if isinstance(ranking, bert.TooLongError):
    st.warning(controls.md_escape(str(ranking)))
    st.stop()
if not ranking.sentences:
    st.info(
        control_hint("Type or paste a document above: a few sentences, each ending with . ! or ?")
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

k = pickers.summary_k(n)
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
sentence_views.show_table(sentences, ranking.scores, chosen, k)

# A slide moves the page's first figure, this one, under the page's title: its heading
# would stand over nothing, and the figure's title says the same.
if not session.presenting():
    st.header("Similarity between sentences")
sentence_views.show(
    st,
    "summarize_similarity",
    ranking.similarity,
    labels,
    "Cosine similarity of the sentence embeddings (negatives set to 0)",
    value_name="similarity",
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
        f"second's, in one layer, averaged over its {model.config.n_heads} heads. [CLS] and "
        "[SEP] are left out, but many heads also park attention on the first few tokens "
        "whatever they say (an *attention sink*), which favours the first sentence."
    )
    n_layers = model.config.n_layers
    layer = st.select_slider("Layer", range(n_layers), value=n_layers - 1, key="summarize_layer")
    pair = documents.sentence_attention(doc[: sentences[-1].end], layer, folder)
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
    sentence_views.show(
        st,
        "summarize_attention",
        pair,
        labels,
        f"Layer {layer}: mean attention from sentence (row) to sentence (column)",
        value_name="mean weight",
        x_title="to sentence",
        y_title="from sentence",
        digits=3,
    )
sentence_views.show_centrality(
    st,
    "summarize_centrality",
    labels,
    ranking.scores,
    chosen,
    received,
    "LexRank score and attention received from the other sentences (★ in the summary)"
    if received is not None
    else "LexRank score (★ in the summary)",
)

st.header("Extractive, not abstractive")
st.markdown(
    "This page *extracts*: it copies the document's most central sentences and writes "
    "nothing new. An *abstractive* summarizer, such as BART (Lewis et al. 2020) or PEGASUS "
    "(Zhang et al. 2020), has a decoder write the summary one token at a time, each step "
    "attending over the document's encoding and over what it has written so far. That loop "
    "needs a model trained to write summaries; the decoder page runs the same loop step by "
    "step on a small translator this project trained."
)
st.page_link(
    "../pages/decoder.py",
    label="The decoding loop, step by step: Decoder & cross-attention",
    icon=":material/translate:",
)
