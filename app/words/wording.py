"""What the pages and the tour say about the numbers on screen: one wording per fact.

Pure functions from the engine's numbers (the tokens, a row of weights, a layer and a
head) to Markdown sentences. Each sentence names only tokens of the text shown (quoted,
Markdown-escaped) and weights as the engine computed them; where the words a sentence
was written for are absent (a text without "it"), it says what it shows instead. The
page and the tour that state the same fact call the same function.
"""

from __future__ import annotations

import numpy as np

from app.state.controls import md_escape

#: The markers MiniLM's tokenizer adds around every text.
SPECIAL_TOKENS = frozenset({"[CLS]", "[SEP]"})
#: How the app numbers things, said beside the equations whose paper counts from 1
#: (docs/decisions.md).
INDEXING = (
    "Layers, heads, tokens and features are numbered from 0 everywhere in the app: on "
    "the charts, in the controls, in links and in the equations."
)
#: Why the learned position table's colours are clipped, on its page and in the tour.
LEARNED_POSITIONS_SCALE = (
    "A few of its entries are far larger than the rest, so its colours are clipped (the "
    "title gives the range; hover for every value)."
)
#: The query a page starts on when the text has no "it": the first of these it has.
PRONOUNS = ("it", "they", "he", "she", "him", "her", "them")


def quote(label):
    """A token as the pages name it: in curly quotes, Markdown-escaped."""
    return f"“{md_escape(label)}”"


def plural(count, noun):
    """``count`` and ``noun``, with an s when the count is not one: "1 step", "3 steps"."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def layer_head(layer, head):
    """A trained head as the pages name it, counted from 0 as on the charts."""
    return f"layer {layer}, head {head}"


def default_query(labels):
    """The query row a page starts on: the first "it", else the first pronoun, else a word.

    Without a pronoun the row is the first token that is a word (not [CLS], [SEP] or
    punctuation), and position 0 when there is none.
    """
    lowered = [label.lower() for label in labels]
    for word in PRONOUNS:
        if word in lowered:
            return lowered.index(word)
    words = [i for i, label in enumerate(labels) if label not in SPECIAL_TOKENS and _wordy(label)]
    return words[0] if words else 0


def _wordy(label):
    return any(ch.isalnum() for ch in label)


def query_note(labels, query):
    """Why the page shows row ``query``: said only when the text has no "it" to show."""
    if any(label.lower() == "it" for label in labels):
        return None
    kind = "first pronoun" if labels[query].lower() in PRONOUNS else "first word"
    return f"This text has no *it*: the row shown is its {kind}, {quote(labels[query])}."


def _key_name(labels, j, query):
    return "itself" if j == query else quote(labels[j])


def marker_note(labels, keys):
    """A word on [CLS] or [SEP] when one of ``keys`` is such a marker, else None."""
    marker = next((labels[j] for j in keys if labels[j] in SPECIAL_TOKENS), None)
    if marker is None:
        return None
    return (
        f"{quote(marker)} is a marker the tokenizer adds, not a word of the text: heads often "
        "park weight on such markers when nothing in the text matches (Clark et al. 2019)."
    )


def strongest_keys(row, count=3):
    """The keys with the largest weights in ``row``, largest first: (index, weight) pairs."""
    row = np.asarray(row, dtype=float)
    order = np.argsort(-row, kind="stable")[:count]
    return [(int(j), float(row[j])) for j in order]


def attends(row, labels, query):
    """Where token ``query`` spends its weights: its strongest key and the two after it.

    Parameters
    ----------
    row : ndarray of shape (n_k,), the query's weights (a row of the attention matrix)
    labels : sequence of n_k str
    query : int, the query's position (self-attention: its key is the same token)

    Returns
    -------
    str, Markdown: the sentence, and one on [CLS] or [SEP] when they are among the keys
    """
    keys = strongest_keys(row)
    (first, weight), *rest = keys
    sentence = (
        f"{quote(labels[query])} spends {weight:.2f} of its budget of 1 on "
        f"{_key_name(labels, first, query)}, its strongest key"
    )
    if rest:
        sentence += "; next come " + " and ".join(
            f"{_key_name(labels, j, query)} ({w:.2f})" for j, w in rest
        )
    note = marker_note(labels, [j for j, _ in keys])
    return sentence + "." + (f" {note}" if note else "")


def random_and_trained(labels, query, untrained, trained, trained_name):
    """One row with random weights against the same row of a trained head.

    Parameters
    ----------
    labels : sequence of n str
    query : int, the row
    untrained, trained : ndarray of shape (n,), the row's weights before and after training
    trained_name : str, the trained head ("MiniLM, layer 3, head 1")
    """
    (j_random, w_random), (j_trained, w_trained) = (
        strongest_keys(row, 1)[0] for row in (untrained, trained)
    )
    said = (
        f"Row {quote(labels[query])}: the random weights put their largest share, "
        f"{w_random:.3f}, on {_key_name(labels, j_random, query)}; {trained_name} puts "
        f"{w_trained:.3f} on {_key_name(labels, j_trained, query)}."
    )
    note = marker_note(labels, [j_random, j_trained])
    return said + (f" {note}" if note else "")


def word_pieces(labels, continues=None):
    """The first word the tokenizer cut into pieces: (its pieces' positions, the word), or None.

    ``continues`` says which tokens continue the word before them
    (:attr:`engine.Tokenization.continues`); without it, those labelled with WordPiece's
    ``##`` in front.
    """
    if continues is None:
        continues = [label.startswith("##") for label in labels]
    for i in range(len(labels) - 1):
        if not continues[i] and continues[i + 1]:
            end = i + 1
            while end < len(labels) and continues[end]:
                end += 1
            word = labels[i] + "".join(label.removeprefix("##") for label in labels[i + 1 : end])
            return list(range(i, end)), word
    return None


def pieces_sentence(labels, continues=None, hashes=True):
    """What the tokenizer did to this text's words, with the first word it split, if any.

    ``continues`` as :func:`word_pieces` takes it. ``hashes``: the tokenizer marks a
    word's later pieces with ``##`` (WordPiece), and the sentence says so; a byte-level
    BPE marks none.
    """
    found = word_pieces(labels, continues)
    if found is None:
        marked = " marked ## where they continue a word" if hashes else ""
        return (
            "Every word of this text is in the vocabulary whole, so none is cut into pieces; "
            f"a rarer word would be, into fragments{marked}."
        )
    positions, word = found
    marks = ", the \\#\\# marking a piece that continues the word before it" if hashes else ""
    return (
        f"Here {quote(word)} is not in the vocabulary whole: it becomes "
        + ", ".join(quote(labels[i]) for i in positions)
        + f"{marks}."
    )


def case_sentence(tokens, labels, ids):
    """What a lower-case vocabulary does to a capitalised word, or None when nothing is.

    ``tokens`` are the tokenizer's own strings (MiniLM's are lower-case), ``labels`` the
    text as typed. Names the first capitalised word and, when the text has it in lower
    case too, says that both get the same id.
    """
    for i, (token, label) in enumerate(zip(tokens, labels, strict=True)):
        if label != token and label.lower() == token:
            same = next((j for j, other in enumerate(labels) if other == token), None)
            looked_up = (
                f"{quote(label)} is looked up as {quote(token)}: both are id {ids[i]}"
                if same is not None
                else f"{quote(label)} is looked up in lower case, as id {ids[i]}"
            )
            return (
                f"MiniLM's vocabulary is lower-case, so {looked_up}; the page shows each "
                "word as typed."
            )
    return None


#: What the attention-sinks view shows (/pretrained, and /attention on a decoder).
SINKS = (
    "Xiao et al. (2024, §3.1): trained models park much of their attention on the first "
    "token, whatever it is, a sink for the weight a head has no use for. Left: each head's "
    "mean weight on the first token, over the tokens after it; right: the tokens that "
    "receive the most, over every layer, head and query."
)


def head_projections(settings, head, part, matrices):
    """Which features of a trained layer's projections head ``head`` owns, from its config.

    ``part`` is "columns" (X W, the papers' convention) or "rows" (the book's), ``matrices``
    the projections' names in that convention.
    """
    c = settings.config
    d, own = c.d_head, f"{part} {c.d_head * head}–{c.d_head * (head + 1) - 1}"
    said = (
        f"X is the hidden state entering layer {settings.layer}"
        + (" after its RMSNorm" if c.norm_first else "")
        + f": {c.d_model} features per token, drawn cropped to the first 128. "
    )
    if c.kv_heads == c.n_heads:
        said += (
            f"Head {head} owns {own} of the layer's {matrices}"
            + (" (and their biases)" if c.norm == "layer" else "")
            + f": its queries, keys and values have {d} features each."
        )
    else:
        kv = head // (c.n_heads // c.kv_heads)
        said += (
            f"Head {head} owns {own} of W_Q; its keys and values come from key/value head "
            f"{kv}, {part} {d * kv}–{d * (kv + 1) - 1} of W_K and W_V, which "
            f"{c.n_heads // c.kv_heads} query heads share (grouped-query attention). Each has "
            f"{d} features; q and k are drawn after their rotary rotation."
        )
    return said + " Layers, heads and features are counted from 0, as on the charts."


def trained_heads(settings):
    """What /multi-head shows of a trained layer: its heads, its split, its W_O."""
    c = settings.config
    said = (
        f"{settings.label}'s layer {settings.layer}: its {c.n_heads} trained heads of "
        f"{c.d_head} features, their real split of Q"
    )
    if c.kv_heads < c.n_heads:
        return said + (
            f" (the keys and values of {c.kv_heads} key/value heads, each shared by "
            f"{c.n_heads // c.kv_heads} query heads), their concatenation and the layer's W_O."
        )
    return said + " (biases included), their concatenation and the layer's W_O (and b_O)."


def trained_layer(settings):
    """What /encoder-layer runs of a trained model: its layer, its norms, its feed-forward."""
    c = settings.config
    if c.norm_first:
        return (
            f"{settings.label}'s layer {settings.layer}, as trained: a pre-norm decoder layer, "
            "RMSNorm before each sub-layer and a SwiGLU feed-forward, with no biases, so that "
            "is what runs"
        )
    return (
        f"{settings.label}'s layer {settings.layer}, as trained: BERT is post-LN, so that is "
        "what runs, every sub-layer with its trained biases and LayerNorm gains"
    )


def rotary_positions(settings):
    """What /positional-encoding says of a rotary model's positions, from its config."""
    c = settings.config
    pairs = c.d_head // 2
    return (
        f"{settings.label} adds nothing to its embeddings: it rotates each head's queries "
        f"and keys, feature pair i of d_head = {c.d_head} by the angle p·θ_i, "
        f"θ_i = {c.rope_theta:,.0f}^(−2i/{c.d_head}), for the {pairs} pairs (Su et al. 2021). "
        "The table shows the sines (even columns) and cosines (odd columns) of those angles "
        f"at each position; it reads {c.max_tokens:,} positions. A query–key score then "
        "depends on how far apart the two tokens are, not where they are."
    )


def permutation_test(settings, specials):
    """What /positional-encoding's permutation test runs on a trained model.

    ``specials``: the tokens the model adds around a text ([CLS] and [SEP]), or none.
    """
    c = settings.config
    said = (
        f"Here the whole {c.n_layers}-layer model: shuffle its tokens"
        + (f" ({' and '.join(specials)} too)" if specials else "")
        + " and compare its last hidden states with the original ones, shuffled the same way."
    )
    if c.causal:
        said += (
            f" {settings.label} is causal: even with its positions removed each token sees "
            "only the tokens before it, and a shuffle changes which those are, so its outputs "
            "do not just permute either way."
        )
    return said


def grouped_heads(config):
    """What the grouped-query view says, from the model's config."""
    kv = config.kv_heads
    return (
        f"This model computes {plural(kv, 'key/value head')} for its {config.n_heads} query "
        "heads: each group of query heads reads the same keys and values, and differs only "
        "by its queries. In red, the group of the head shown."
    )


def head_model(model, layer, head):
    """Whose head a sentence is about: a trained model's layer and head, or the random model's.

    ``model`` is the trained model's short name ("MiniLM", "SmolLM2"), or None for random.
    """
    if model:
        return f"{model}'s {layer_head(layer, head)}"
    return f"the random model's head {head} (untrained: its patterns mean nothing yet)"


def finder_answer(ranked, query_label, key_label):
    """The head finder's answer for this text: the head that links the two tokens most.

    Parameters
    ----------
    ranked : sequence of engine.analysis.HeadWeight-like (layer, head, weight), strongest first
    query_label, key_label : str
    """
    best, *others = ranked
    answer = (
        f"Which head links {quote(query_label)} to {quote(key_label)} most? "
        f"{layer_head(best.layer, best.head).capitalize()}, with weight {best.weight:.2f}"
    )
    if others:
        answer += "; then " + ", ".join(
            f"{layer_head(h.layer, h.head)} ({h.weight:.2f})" for h in others[:2]
        )
    return answer + "."


def tokens_sentences(tokenization, tokenizer):
    """What the tokenizer did to this text: its split words and, for WordPiece, the case.

    Parameters
    ----------
    tokenization : engine.Tokenization
    tokenizer : str, "wordpiece" (MiniLM's, lower-case), "bpe" or "words"

    Returns
    -------
    list of str, sentences of Markdown
    """
    if tokenizer == "words":
        return ["This tokenizer keeps every word and punctuation mark whole."]
    hashes = tokenizer == "wordpiece"
    sentences = [pieces_sentence(tokenization.labels, tokenization.continues, hashes)]
    if tokenizer == "wordpiece":
        case = case_sentence(tokenization.tokens, tokenization.labels, tokenization.ids)
        if case:
            sentences.append(case)
    return sentences


def needs_shorter(view, n, limit, why):
    """Why a view of /pretrained is not drawn for a text of ``n`` tokens, and what is instead."""
    return (
        f"{view} is drawn for texts of at most {limit:,} tokens; this one has {n:,}. {why} "
        "The grid of every head and the head view above show any head at this length."
    )
