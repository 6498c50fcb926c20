"""Head-role scores (engine/roles.py): parity with transformers' attentions, oracles, laws.

Parity: ``tests/data/tiny_models/roles.npz`` (``scripts/make_roles_reference.py``) holds
what transformers computes on five tiny checkpoints for the repeated random sequence of
seed 0; each score the engine gives (its own forward pass on the same ids) equals the
score's formula written as a loop over transformers' weights. On the parity files' texts
(no repeat there) each score function is checked on the stored weights against the same
loops. Properties: every score lies in [0, 1]; a head that is exactly a role's pattern
scores 1 on it.
"""

import numpy as np
import pytest
import tiny_models
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from engine import checkpoint, roles

TINY = tiny_models.TINY
ATOL = 1e-5
REFERENCE = TINY / "roles.npz"
FOLDERS = ("bert", "gpt2", "llama", "qwen2", "gemma3_fp32")
#: The parity files' texts with their stored attentions: (folder, text).
TEXTS = [
    (folder, text)
    for folder in ("bert", "roberta", "gpt2", "llama", "mistral", "qwen2", "gemma3_fp32")
    for text in ("short", "long")
]


# The formulas as loops, one weight at a time: the oracles.


def loop_previous(a):
    n = a.shape[-1]
    return sum(a[..., i, i - 1] for i in range(1, n)) / (n - 1)


def loop_induction(a, start, repeat):
    queries = range(start + repeat, start + 2 * repeat)
    return sum(a[..., i, i - repeat + 1] for i in queries) / repeat


def loop_duplicate(a, start, repeat):
    queries = range(start + repeat, start + 2 * repeat)
    return sum(a[..., i, i - repeat] for i in queries) / repeat


def loop_sink(a):
    n = a.shape[-1]
    return sum(a[..., i, 0] for i in range(1, n)) / (n - 1)


def loop_local(a, window):
    n = a.shape[-1]
    rows = [sum(a[..., i, j] for j in range(i - window, i)) for i in range(window + 1, n)]
    return sum(rows) / len(rows)


def oracle(role, a, start, repeat, window):
    return {
        "previous_token": lambda: loop_previous(a),
        "induction": lambda: loop_induction(a, start, repeat),
        "duplicate_token": lambda: loop_duplicate(a, start, repeat),
        "sink": lambda: loop_sink(a),
        "local": lambda: loop_local(a, window),
    }[role]()


@pytest.fixture(scope="module")
def reference():
    with np.load(REFERENCE) as data:
        return {key: data[key] for key in data.files}


# Parity with transformers on the repeated random tokens


@pytest.mark.parametrize("name", FOLDERS)
def test_the_scores_equal_the_formulas_over_transformers_attentions(name, reference):
    model = checkpoint.load(TINY / name)
    ids, start = reference[f"{name}/ids"], int(reference[f"{name}/start"])
    repeat = int(reference[f"{name}/repeat"])
    theirs = reference[f"{name}/attentions"].astype(np.float64)  # [n_layers, n_heads, n, n]
    drawn, drawn_start = roles.repeated_sequence(model, repeat, 0)
    np.testing.assert_array_equal(drawn, ids)  # the seed draws the same tokens
    assert drawn_start == start
    ours = roles.head_roles(model, repeat, seeds=(0,))
    assert ours.roles == (roles.DECODER_ROLES if model.config.causal else roles.ENCODER_ROLES)
    np.testing.assert_allclose(ours.attentions, theirs, atol=ATOL)
    for k, role in enumerate(ours.roles):
        expected = oracle(role, theirs, start, repeat, ours.window)
        np.testing.assert_allclose(ours.scores[k], expected, atol=ATOL, err_msg=role)
    np.testing.assert_array_equal(ours.spread, 0.0)  # one seed: no spread


def test_the_encoder_is_not_scored_on_induction():
    model = checkpoint.load(TINY / "bert")
    assert "induction" not in roles.roles_of(model.config)
    assert "induction" in roles.roles_of(checkpoint.load(TINY / "gpt2").config)


@pytest.mark.parametrize(("folder", "text"), TEXTS)
def test_each_score_function_equals_its_loop_on_stored_attentions(folder, text):
    a = tiny_models.references([folder])[folder][f"{text}/attentions"].astype(np.float64)
    n = a.shape[-1]
    start, repeat, window = 1, (n - 1) // 2, 3  # any layout that fits: the formula's arithmetic
    for role in roles.DECODER_ROLES:
        ours = roles.role_scores(a, (role,), start, repeat, window)[0]
        np.testing.assert_allclose(ours, oracle(role, a, start, repeat, window), atol=1e-12)


# Seeds, averages and spread


def test_several_seeds_average_the_single_seed_scores():
    model = checkpoint.load(TINY / "gpt2")
    both = roles.head_roles(model, 10, seeds=(3, 4))
    each = [roles.head_roles(model, 10, seeds=(s,)).scores for s in (3, 4)]
    np.testing.assert_allclose(both.scores, np.mean(each, axis=0), atol=1e-12)
    np.testing.assert_allclose(both.spread, np.std(each, axis=0), atol=1e-12)
    assert both.spread.max() > 0


def test_the_sequence_is_the_models_specials_around_two_repeats_of_ordinary_tokens():
    model = checkpoint.load(TINY / "bert")
    ids, start = roles.repeated_sequence(model, 12, 7)
    cls, sep = (model.tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]"))
    assert (ids[0], ids[-1], start, len(ids)) == (cls, sep, 1, 26)
    np.testing.assert_array_equal(ids[1:13], ids[13:25])
    assert len(set(ids[1:13].tolist())) == 12  # distinct: the earlier copy is exactly R back
    special = set(model.tokenizer.get_added_tokens_decoder())
    assert not special & set(ids[1:25].tolist())
    again, _ = roles.repeated_sequence(model, 12, 7)
    np.testing.assert_array_equal(ids, again)
    other, _ = roles.repeated_sequence(model, 12, 8)
    assert not np.array_equal(ids, other)


def test_ordinary_ids_leave_out_added_tokens_and_placeholders():
    tokenizer = Tokenizer.from_file(str(TINY / "bert" / "tokenizer.json"))
    ordinary = set(roles.ordinary_ids(tokenizer).tolist())
    assert not ordinary & set(tokenizer.get_added_tokens_decoder())
    names = {tokenizer.id_to_token(i) for i in ordinary}
    assert not {n for n in names if n.startswith("[") and n.endswith("]")}
    assert len(ordinary) == tokenizer.get_vocab_size() - len(
        [t for t in tokenizer.get_vocab() if t.startswith("[") and t.endswith("]")]
    )


def test_a_repeat_that_does_not_fit_is_refused_in_words():
    a = np.full((2, 10, 10), 0.1)
    with pytest.raises(ValueError, match="do not fit in 10 tokens"):
        roles.induction(a, 1, 5)
    with pytest.raises(ValueError, match="window"):
        roles.local(a, 9)
    with pytest.raises(ValueError, match="seed"):
        roles.head_roles(checkpoint.load(TINY / "gpt2"), 5, seeds=())


def test_the_repeat_shrinks_to_fit_a_short_model():
    model = checkpoint.load(TINY / "bert")  # 128 positions, [CLS] and [SEP]
    assert roles.fitting_repeat(model) == 50
    assert roles.fitting_repeat(model, 500) == 63


# Properties


@st.composite
def attention_stacks(draw):
    """Row-stochastic (…, n, n) weights, causal or not: a stack of heads."""
    n = draw(st.integers(6, 16))
    heads = draw(st.integers(1, 3))
    causal = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    logits = np.random.default_rng(seed).normal(0, 3, (heads, n, n))
    if causal:
        logits = np.where(np.tril(np.ones((n, n), bool)), logits, -np.inf)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True)


@settings(max_examples=60, deadline=None)
@given(attention_stacks())
def test_every_score_lies_between_0_and_1(a):
    n = a.shape[-1]
    start, repeat = 1, (n - 1) // 2
    scores = roles.role_scores(a, roles.DECODER_ROLES, start, repeat, 2)
    assert scores.shape == (5, a.shape[0])
    assert np.all(scores >= -1e-12)
    assert np.all(scores <= 1 + 1e-12)


def pattern(n, key_of):
    """A head whose query i puts all its weight on key ``key_of(i)`` (itself where None)."""
    a = np.zeros((n, n))
    for i in range(n):
        j = key_of(i)
        a[i, i if j is None else j] = 1.0
    return a


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2), st.integers(2, 20))
def test_a_heads_exact_pattern_scores_1_on_its_role(start, repeat):
    n = start + 2 * repeat + 1  # one token after, as [SEP]
    previous = pattern(n, lambda i: i - 1 if i >= 1 else None)
    assert roles.previous_token(previous) == pytest.approx(1.0)
    assert roles.local(previous, 1) == pytest.approx(1.0)
    second = range(start + repeat, start + 2 * repeat)
    induction = pattern(n, lambda i: i - repeat + 1 if i in second else None)
    assert roles.induction(induction, start, repeat) == pytest.approx(1.0)
    assert roles.duplicate_token(induction, start, repeat) == pytest.approx(0.0)
    duplicate = pattern(n, lambda i: i - repeat if i in second else None)
    assert roles.duplicate_token(duplicate, start, repeat) == pytest.approx(1.0)
    assert roles.induction(duplicate, start, repeat) == pytest.approx(0.0)
    first = pattern(n, lambda i: 0)
    assert roles.sink(first) == pytest.approx(1.0)
    assert roles.previous_token(first) == pytest.approx(1 / (n - 1))  # query 1's previous is 0
