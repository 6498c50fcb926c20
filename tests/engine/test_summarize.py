"""Tests for engine.summarize: sentence splitting, LexRank, parity of the sentence embeddings.

The golden file ``tests/data/summary_golden.npz`` holds what sentence-transformers
(PyTorch, CPU) computed for five sentences, one longer than its 256-token cut;
``scripts/make_summary_golden.py`` wrote it. LexRank is checked against stationary
distributions worked out by hand and against the linear system it solves.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import bert, checkpoint
from engine import summarize as sm
from engine.resources import minilm_dir

GOLDEN = Path(__file__).parents[1] / "data" / "summary_golden.npz"
EMBEDDING_ATOL = 1e-5  # unit vectors in float32; measured differences ~2e-7

needs_model = pytest.mark.skipif(minilm_dir() is None, reason="MiniLM is not installed")


# Sentence splitting


def texts(sentences):
    return [sentence.text for sentence in sentences]


def test_splits_at_marks_followed_by_whitespace():
    text = "First one. Second one!  Third one?\nFourth one."
    assert texts(sm.split_sentences(text)) == [
        "First one.",
        "Second one!",
        "Third one?",
        "Fourth one.",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Pi is 3.14 today.", ["Pi is 3.14 today."]),  # no whitespace after the point
        ("Wait!! Really?! Yes.", ["Wait!!", "Really?!", "Yes."]),
        ("no sentence ends here", ["no sentence ends here"]),
        ("  padded.  \n\n  text  ", ["padded.", "text"]),
        ("e.g. this", ["e.g.", "this"]),  # the simple rule, exactly
        ("", []),
        ("   \n\t ", []),
        (". ! ?", [".", "!", "?"]),
    ],
)
def test_split_cases(text, expected):
    assert texts(sm.split_sentences(text)) == expected


@given(st.text(alphabet="ab .!?\n\t", max_size=80))
def test_spans_point_at_the_sentences(text):
    sentences = sm.split_sentences(text)
    for sentence in sentences:
        assert text[sentence.start : sentence.end] == sentence.text
        assert sentence.text == sentence.text.strip()
        assert sentence.text
    starts = [sentence.start for sentence in sentences]
    assert starts == sorted(starts)
    # Nothing but whitespace is lost.
    assert "".join("".join(t.split()) for t in texts(sentences)) == "".join(text.split())


# LexRank


def closed_form(similarity, damping):
    """Solve p = (1-d)/N 1 + d Mᵀ p directly."""
    s = np.asarray(similarity, dtype=float)
    n = len(s)
    m = s / s.sum(axis=1, keepdims=True)
    return np.linalg.solve(np.eye(n) - damping * m.T, np.full(n, (1 - damping) / n))


def test_lexrank_on_a_path_of_three_sentences():
    # S1 - S2 - S3: the middle sentence is like both others. By symmetry p1 = p3 = a,
    # p2 = b, and p2 = 0.05 + 0.85 (a/2 + b/3 + a/2) with 2a + b = 1 gives b = 57/137.
    s = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    ranked = sm.lexrank(s)
    np.testing.assert_allclose(ranked.scores, np.array([40, 57, 40]) / 137, atol=1e-12)
    assert 1 < ranked.iterations < 1000


def test_lexrank_without_damping_is_proportional_to_degree():
    # A random walk on a weighted undirected graph visits each node in proportion to its
    # degree: (1.5, 2, 1.5) / 5.
    s = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]])
    np.testing.assert_allclose(sm.lexrank(s, damping=1.0).scores, [0.3, 0.4, 0.3], atol=1e-10)


def test_lexrank_with_full_damping_off_is_uniform():
    s = np.array([[1.0, 0.9, 0.0], [0.9, 1.0, 0.2], [0.0, 0.2, 1.0]])
    np.testing.assert_allclose(sm.lexrank(s, damping=0.0).scores, np.full(3, 1 / 3))


@given(
    n=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
    damping=st.floats(0.05, 0.95),
)
def test_lexrank_solves_its_linear_system(n, seed, damping):
    rng = np.random.default_rng(seed)
    a = rng.random((n, n))
    s = (a + a.T) / 2
    np.fill_diagonal(s, 1.0)
    ranked = sm.lexrank(s, damping)
    assert ranked.scores.sum() == pytest.approx(1.0)
    assert (ranked.scores > 0).all()
    np.testing.assert_allclose(ranked.scores, closed_form(s, damping), atol=1e-10)


def test_lexrank_of_one_sentence_is_one():
    ranked = sm.lexrank(np.ones((1, 1)))
    np.testing.assert_array_equal(ranked.scores, [1.0])


def test_lexrank_of_nothing_is_empty():
    assert sm.lexrank(np.zeros((0, 0))).scores.shape == (0,)


def test_a_sentence_similar_to_nothing_jumps_uniformly():
    s = np.array([[1.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 0.0]])
    ranked = sm.lexrank(s)
    assert np.isfinite(ranked.scores).all()
    assert ranked.scores.sum() == pytest.approx(1.0)
    assert ranked.scores[2] < ranked.scores[0] == pytest.approx(ranked.scores[1])


def test_top_sentences_keep_document_order():
    scores = np.array([0.1, 0.4, 0.05, 0.3, 0.15])
    np.testing.assert_array_equal(sm.top_sentences(scores, 2), [1, 3])
    np.testing.assert_array_equal(sm.top_sentences(scores, 3), [1, 3, 4])
    np.testing.assert_array_equal(sm.top_sentences(scores, 99), [0, 1, 2, 3, 4])
    assert sm.top_sentences(scores, 0).size == 0


def test_ties_go_to_the_earlier_sentence():
    np.testing.assert_array_equal(sm.top_sentences(np.array([0.25, 0.25, 0.25, 0.25]), 2), [0, 1])


def test_cosine_similarity_clips_negatives():
    e = np.array([[1.0, 0.0], [0.6, 0.8], [-1.0, 0.0]], dtype=np.float32)
    s = sm.cosine_similarity(e)
    np.testing.assert_allclose(s, [[1, 0.6, 0], [0.6, 1, 0], [0, 0, 1]], atol=1e-7)


# Attention between sentences


def test_token_sentences_follow_the_spans():
    sentences = sm.split_sentences("Ab cd. Ef!")  # spans (0, 6) and (7, 10)
    offsets = [(0, 0), (0, 2), (3, 5), (5, 6), (7, 9), (9, 10), (0, 0)]
    np.testing.assert_array_equal(sm.token_sentences(offsets, sentences), [-1, 0, 0, 0, 1, 1, -1])


def test_sentence_attention_is_the_mean_over_token_pairs():
    rng = np.random.default_rng(0)
    w = rng.random((7, 7))
    owner = np.array([-1, 0, 0, 1, 1, 1, -1])
    pair = sm.sentence_attention(w, owner, 2)
    for a in range(2):
        for b in range(2):
            rows, cols = np.flatnonzero(owner == a), np.flatnonzero(owner == b)
            assert pair[a, b] == pytest.approx(w[np.ix_(rows, cols)].mean())


def test_a_sentence_without_tokens_is_nan():
    pair = sm.sentence_attention(np.ones((4, 4)), np.array([0, 0, 1, -1]), 3)
    np.testing.assert_array_equal(pair[:2, :2], np.ones((2, 2)))
    assert np.isnan(pair[2]).all()
    assert np.isnan(pair[:, 2]).all()
    np.testing.assert_allclose(sm.attention_inflow(pair), [0.5, 0.5, 0.0])


def test_attention_inflow_leaves_out_the_diagonal():
    pair = np.array([[9.0, 1.0, 3.0], [1.0, 9.0, 0.0], [2.0, 2.0, 9.0]])
    # Received from the others: S1 1 + 2, S2 1 + 2, S3 3 + 0; shares of 9.
    np.testing.assert_allclose(sm.attention_inflow(pair), [3 / 9, 3 / 9, 3 / 9])
    pair[0, 2] = 6.0
    np.testing.assert_allclose(sm.attention_inflow(pair), [3 / 12, 3 / 12, 6 / 12])
    np.testing.assert_array_equal(sm.attention_inflow(np.ones((1, 1))), [1.0])


# The real model


@pytest.fixture(scope="module")
def model():
    return checkpoint.load_minilm()


@pytest.fixture(scope="module")
def golden():
    with np.load(GOLDEN) as data:
        return {key: data[key] for key in data.files}


@needs_model
def test_embeddings_match_sentence_transformers(model, golden):
    sentences = [str(s) for s in golden["sentences"]]
    ours = sm.embed_sentences(model, sentences)
    error = np.abs(ours.embeddings - golden["embeddings"]).max()
    print(f"max |Δ| to sentence-transformers: {error:.2e}")
    np.testing.assert_allclose(ours.embeddings, golden["embeddings"], rtol=0, atol=EMBEDDING_ATOL)
    np.testing.assert_allclose(np.linalg.norm(ours.embeddings, axis=1), 1.0, atol=1e-6)
    assert ours.n_tokens.max() > sm.SENTENCE_MAX_TOKENS  # the cut was exercised


@needs_model
def test_the_cut_is_sentence_transformers_own(golden):
    config = json.loads((minilm_dir() / "sentence_bert_config.json").read_text())
    assert sm.SENTENCE_MAX_TOKENS == config["max_seq_length"] == int(golden["max_seq_length"])


@needs_model
def test_ranking_a_document(model):
    text = (
        "Cats sleep most of the day. Dogs love long walks in the park. "
        "Cats and dogs are the most popular pets. The stock market fell sharply on Monday."
    )
    ranking = sm.rank_sentences(model, text, max_sentences=3)
    assert texts(ranking.sentences) == texts(sm.split_sentences(text))[:3]
    assert ranking.n_left_out == 1
    assert ranking.similarity.shape == (3, 3)
    np.testing.assert_allclose(np.diag(ranking.similarity), 1.0, atol=1e-6)
    np.testing.assert_allclose(ranking.similarity, ranking.similarity.T)
    assert ranking.scores.sum() == pytest.approx(1.0)
    full = sm.rank_sentences(model, text)
    # The pets sentence is like both others; the stock market like none.
    assert np.argmax(full.scores) == 2
    assert np.argmin(full.scores) == 3


@needs_model
def test_whole_document_attention_rows(model):
    text = "The cat sat down. It was tired! Was it hungry?"
    run = bert.run(model, text)
    sentences = sm.split_sentences(text)
    owner = sm.token_sentences(run.offsets, sentences)
    assert owner[0] == owner[-1] == -1
    assert set(owner[1:-1].tolist()) == {0, 1, 2}
    pair = sm.sentence_attention(run.attentions[5].mean(axis=0), owner, len(sentences))
    assert pair.shape == (3, 3)
    assert np.isfinite(pair).all()
    assert (pair > 0).all()
