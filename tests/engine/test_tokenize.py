"""Tests for engine.tokenize (words, byte-level BPE, MiniLM WordPiece) and the toy embeddings."""

import numpy as np
import pytest
from tokenizers import Tokenizer

import engine
from engine.resources import ASSETS, minilm_dir
from engine.tokenize import MAX_TOKENS, clean_text, piece_labels, read_tokenizer, tokenize
from engine.toy import token_embeddings, toy_weights

# The passage the textbook opens chapter 12 with, and the app's default text.
PASSAGE = (
    "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
    "food. In the end, they just gave me two slices of bread. Their ambiance was just as "
    "good as the food and service."
)

BPE = Tokenizer.from_file(str(ASSETS / "bpe-tokenizer.json"))

needs_minilm = pytest.mark.skipif(minilm_dir() is None, reason="MiniLM package not installed")


def _no_space(text):
    return "".join(text.split())


# --- words ---------------------------------------------------------------------------


def test_words_split_off_punctuation():
    result = tokenize("Hello, world! It's 3.5 km.", "words")
    assert result.tokens == ["Hello", ",", "world", "!", "It", "'", "s", "3", ".", "5", "km", "."]
    assert result.labels == result.tokens
    assert result.truncated == 0


def test_word_ids_number_distinct_words_in_order_of_first_appearance():
    result = tokenize("it is what it is", "words")
    assert result.ids == [0, 1, 2, 0, 1]


def test_words_cover_the_passage():
    result = tokenize(PASSAGE, "words")
    assert "".join(result.labels) == _no_space(PASSAGE)
    assert result.tokens.count("it") == 1
    assert "." in result.tokens


# --- bpe -----------------------------------------------------------------------------


def test_bpe_tokenizes_the_passage_without_unknown_tokens():
    result = tokenize(PASSAGE, "bpe")
    vocab_size = BPE.get_vocab_size()
    assert len(result.tokens) > len(PASSAGE.split())  # subwords, not whole words
    assert all(0 <= i < vocab_size for i in result.ids)
    assert all(BPE.id_to_token(i) == t for i, t in zip(result.ids, result.tokens, strict=True))
    assert not any("unk" in token.lower() for token in result.tokens)
    assert BPE.decode(result.ids) == PASSAGE


def test_bpe_labels_cover_the_text():
    result = tokenize(PASSAGE, "bpe")
    assert "".join(label.removeprefix("##") for label in result.labels) == _no_space(PASSAGE)
    assert all(label.strip() == label and label for label in result.labels)


def test_bpe_labels_are_the_text_and_the_later_pieces_of_a_word_are_flagged():
    """Issue 55: byte-level BPE's pieces were written with WordPiece's "##" ("##oys")."""
    result = tokenize("Their ambiance was good", "bpe")
    assert not any(label.startswith("##") for label in result.labels)
    words = []
    for label, continues in zip(result.labels, result.continues, strict=True):
        words[-1:] = [words[-1] + label] if continues else [*words[-1:], label]
    assert words == ["Their", "ambiance", "was", "good"]
    assert sum(result.continues) >= 2


def _decoded(tokenizer, token_id):
    """One token as the tokenizer's own decoder writes it, as a label shows it."""
    text = tokenizer.decode([token_id])
    return text.strip() or text.replace("\n", "↵").replace("\t", "⇥").replace(" ", "␣")


@pytest.mark.parametrize("name", ["app's bpe", "gpt2", "llama", "qwen2"])
def test_byte_level_labels_are_what_the_tokenizers_decoder_writes(name):
    """Each label is the token decoded alone: no "##", a line break "↵" not GPT-2's "Ċ"."""
    from tiny_models import TINY

    path = ASSETS / "bpe-tokenizer.json" if name == "app's bpe" else TINY / name / "tokenizer.json"
    tokenizer = read_tokenizer(path)
    text = "The boys ran.\nThen  they  stopped\tand\n\nwaited, unconvinced."
    encoding = tokenizer.encode(text, add_special_tokens=False)
    labels = piece_labels(text, encoding.tokens, encoding.offsets)
    assert labels == [_decoded(tokenizer, i) for i in encoding.ids]
    assert "↵" in labels
    assert not any("Ċ" in label or "Ġ" in label or "▁" in label for label in labels)


@pytest.mark.parametrize("text", ["naïve café", "emoji 🙂 and 中文", "tab\tand\nnewline"])
def test_bpe_handles_any_text_without_unknown_tokens(text):
    result = tokenize(text, "bpe")
    assert BPE.decode(result.ids) == text


# --- wordpiece -----------------------------------------------------------------------


@needs_minilm
def test_wordpiece_is_uncased():
    lower = tokenize("the restaurant refused", "wordpiece")
    mixed = tokenize("The RESTAURANT Refused", "wordpiece")
    assert lower.ids == mixed.ids
    assert lower.tokens == mixed.tokens == ["the", "restaurant", "refused"]
    assert mixed.labels == ["The", "RESTAURANT", "Refused"]  # labels show the text as typed


@needs_minilm
def test_wordpiece_adds_no_special_tokens_and_covers_the_passage():
    result = tokenize(PASSAGE, "wordpiece")
    assert "[CLS]" not in result.tokens
    assert "[SEP]" not in result.tokens
    assert "[UNK]" not in result.tokens
    assert "".join(label.removeprefix("##") for label in result.labels) == _no_space(PASSAGE)


@needs_minilm
def test_wordpiece_labels_keep_the_hashes_of_later_pieces():
    result = tokenize("Their ambiance was good.", "wordpiece")
    assert result.labels == ["Their", "am", "##bian", "##ce", "was", "good", "."]
    passage = tokenize(PASSAGE, "wordpiece")
    for token, label in zip(passage.tokens, passage.labels, strict=True):
        assert token.startswith("##") == label.startswith("##")


# --- shared behaviour ----------------------------------------------------------------


@pytest.mark.parametrize(
    "tokenizer", ["words", "bpe", pytest.param("wordpiece", marks=needs_minilm)]
)
def test_truncation_at_max_tokens_reports_the_dropped_count(tokenizer):
    full = tokenize(PASSAGE, tokenizer, max_tokens=10_000)
    long_text = " ".join([PASSAGE] * (MAX_TOKENS // len(full.tokens) + 2))
    everything = tokenize(long_text, tokenizer, max_tokens=10_000)
    assert everything.truncated == 0
    assert len(everything.tokens) > MAX_TOKENS
    result = tokenize(long_text, tokenizer)
    assert len(result.tokens) == len(result.labels) == len(result.ids) == MAX_TOKENS
    assert result.truncated == len(everything.tokens) - MAX_TOKENS
    assert result.tokens == everything.tokens[:MAX_TOKENS]
    short = tokenize(PASSAGE, tokenizer, max_tokens=5)
    assert short.tokens == full.tokens[:5]
    assert short.truncated == len(full.tokens) - 5


def test_clean_text_drops_control_and_format_characters():
    dirty = "a\x00b\x07c\u200bd\u202ee\x7ff\ttab\nline\r"
    assert clean_text(dirty) == "abcdef\ttab\nline\r"
    assert tokenize(dirty, "words").tokens == ["abcdef", "tab", "line"]


def test_clean_text_normalises_to_nfc():
    assert clean_text("cafe\u0301") == "caf\u00e9"


def test_unknown_tokenizer_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown tokenizer 'sentencepiece'"):
        tokenize("hello", "sentencepiece")


# --- embeddings ----------------------------------------------------------------------


def test_embedding_of_it_is_the_same_in_any_sentence_and_position():
    first = tokenize("The restaurant refused because it only cooks", "words").tokens
    second = tokenize("it was good and it was cheap", "words").tokens
    emb_first = token_embeddings(first, 16, seed=5)
    emb_second = token_embeddings(second, 16, seed=5)
    it_first = emb_first[first.index("it")]
    np.testing.assert_array_equal(it_first, emb_second[0])
    np.testing.assert_array_equal(it_first, emb_second[4])
    np.testing.assert_array_equal(it_first, token_embeddings(["it"], 16, seed=5)[0])
    assert first.index("it") != 0  # a different position in the other sentence


def test_embeddings_depend_on_token_text_and_seed():
    emb = token_embeddings(["it", "It", "it ", "restaurant"], 16, seed=5)
    assert len({row.tobytes() for row in emb}) == 4
    assert not np.allclose(token_embeddings(["it"], 16, seed=6), emb[:1])


def test_run_toy_embeds_tokens_by_text():
    tokens = ["it", "refused", "it"]
    run = engine.run_toy(tokens, 8, 2, seed=1)
    np.testing.assert_array_equal(run.embeddings, token_embeddings(tokens, 8, seed=1))
    np.testing.assert_array_equal(run.embeddings[0], run.embeddings[2])
    np.testing.assert_array_equal(run.x, run.embeddings + run.positions)


def test_toy_weights_are_seeded_and_scaled():
    weights = toy_weights(256, seed=3)
    np.testing.assert_array_equal(weights.w_q, toy_weights(256, seed=3).w_q)
    assert not np.allclose(weights.w_q, toy_weights(256, seed=4).w_q)
    assert not np.allclose(weights.w_q, weights.w_k)
    assert np.std(weights.w_o) == pytest.approx(1 / 16, rel=0.02)
