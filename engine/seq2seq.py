"""A small trained encoder–decoder transformer, run forward and decoded greedily in NumPy.

The architecture is the original transformer's (Vaswani et al. 2017, "Attention Is All
You Need", section 3.1 and figure 1), shrunk: token embeddings scaled by √d_model plus
sinusoidal positions (section 3.5); an encoder of post-LayerNorm layers, each
multi-head self-attention then a ReLU feed-forward block (section 3.3), each wrapped as
``LayerNorm(x + sublayer(x))``; a decoder whose layers add, between the two, cross-
attention ("encoder-decoder attention", section 3.2.3), whose queries come from the
decoder and whose keys and values come from the encoder's output; and a linear layer
to the target vocabulary. The decoder's self-attention is causally masked, so position
``i`` sees only the tokens written before it.

The weights come from ``assets/translator.npz``, written by
``scripts/train_translator.py``, which trains this model in PyTorch on the toy date
task of :mod:`engine.dates` and checks that this module reproduces its logits. The
archive's keys are exactly :func:`parameter_shapes`' names; loading checks every key
and shape against it. Matrices are applied as ``x @ w`` (shape (d_in, d_out)), like
:func:`engine.attention.multi_head_attention`, whose projections have no bias.

:func:`translate` is the greedy loop of the explainer's ``translate()``: start from
the start token, run the decoder on everything written so far, append the most likely
next token, stop at the end token or after ``max_len`` tokens. It keeps every step's
attention maps, which is what the decoder page draws.

Beyond the dimension vocabulary of :mod:`engine`: ``n_src`` source tokens, ``t`` decoder
input tokens at a step, ``n_layers`` layers in each stack, ``d_ff`` features inside
the feed-forward block, ``n_vocab`` target tokens. Weights are float32.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

from engine import blas
from engine.attention import causal_mask, multi_head_attention
from engine.layers import encoder_layer, feed_forward, layer_norm
from engine.positional import sinusoidal_positional_encoding
from engine.resources import ASSETS
from engine.scores import softmax

__all__ = [
    "END",
    "MAX_SOURCE_WORDS",
    "PAD",
    "START",
    "TRAIN_COMMAND",
    "TRANSLATOR_PATH",
    "UNK",
    "CorruptWeightsError",
    "DecoderRun",
    "DecodingStep",
    "Encoding",
    "Translation",
    "Translator",
    "TranslatorConfig",
    "TranslatorUnavailableError",
    "UnreadableSourceError",
    "decode",
    "decoder_layer",
    "encode",
    "load_translator",
    "parameter_shapes",
    "read_source",
    "save_translator",
    "split_source",
    "split_target",
    "translate",
]

TRANSLATOR_PATH = ASSETS / "translator.npz"
TRAIN_COMMAND = "python scripts/train_translator.py"
PAD, UNK, START, END = "<pad>", "<unk>", "<s>", "</s>"
#: Longer sources are refused: the model was trained on six words at most.
MAX_SOURCE_WORDS = 32
LAYER_NORM_EPS = 1e-5  # PyTorch's default, which the weights were trained with
#: The archive keeps the training script's PyTorch names; the engine's layers take these.
_ENGINE_NAMES = {
    "self_attn": "attn",
    "norm1": "ln_1",
    "norm2": "ln_2",
    "norm3": "ln_3",
    "w1": "w_1",
    "b1": "b_1",
    "w2": "w_2",
    "b2": "b_2",
}
_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


class TranslatorUnavailableError(FileNotFoundError):
    """The weights file is missing; it says how to create it."""


class CorruptWeightsError(ValueError):
    """The weights file does not match the architecture it declares."""


class UnreadableSourceError(ValueError):
    """A source the model cannot read at all: no words, or far too many."""


class TranslatorConfig(NamedTuple):
    """The sizes of the model, stored in the weights file beside the weights."""

    d_model: int
    n_heads: int
    d_ff: int
    n_layers: int


class Translator(NamedTuple):
    """A loaded model: sizes, vocabularies and read-only weights.

    Attributes
    ----------
    config : TranslatorConfig
    source_vocab : tuple of str, source token id -> word; holds :data:`PAD` and :data:`UNK`
    target_vocab : tuple of str, target token id -> character; holds PAD, START and END
    params : dict, nested as :func:`parameter_shapes` names it, in the names of
        :func:`engine.layers.encoder_layer` (``"encoder.0.norm1.g"`` is
        ``params["encoder"][0]["ln_1"]["g"]``)
    source_index, target_index : dict of str -> int, the vocabularies inverted
    """

    config: TranslatorConfig
    source_vocab: tuple
    target_vocab: tuple
    params: dict
    source_index: dict
    target_index: dict


# --- the weights file ------------------------------------------------------------------


def parameter_shapes(config, n_source_vocab, n_target_vocab):
    """Every weight's name in the archive and its shape: the one map from file to model.

    Names are dotted paths; the training script names its PyTorch parameters the same
    way and stores each matrix as (d_in, d_out), so nothing is renamed or transposed.

    Returns
    -------
    dict of str -> tuple of int
    """
    d, f = config.d_model, config.d_ff
    attention = dict.fromkeys(("w_q", "w_k", "w_v", "w_o"), (d, d))
    norm = {"g": (d,), "b": (d,)}
    ffn = {"w1": (d, f), "b1": (f,), "w2": (f, d), "b2": (d,)}
    encoder = {"self_attn": attention, "norm1": norm, "ffn": ffn, "norm2": norm}
    decoder = {
        "self_attn": attention,
        "norm1": norm,
        "cross_attn": attention,
        "norm2": norm,
        "ffn": ffn,
        "norm3": norm,
    }
    shapes = {
        "source_embedding": (n_source_vocab, d),
        "target_embedding": (n_target_vocab, d),
        "out.w": (d, n_target_vocab),
        "out.b": (n_target_vocab,),
    }
    for stack, layer in (("encoder", encoder), ("decoder", decoder)):
        for i in range(config.n_layers):
            for block, weights in layer.items():
                for name, shape in weights.items():
                    shapes[f"{stack}.{i}.{block}.{name}"] = shape
    return shapes


def save_translator(path, config, source_vocab, target_vocab, weights):
    """Write a model to ``path`` as an uncompressed .npz, after checking every shape.

    Parameters
    ----------
    config : TranslatorConfig
    source_vocab, target_vocab : sequences of str
    weights : dict of str -> ndarray, named as :func:`parameter_shapes`
    """
    expected = parameter_shapes(config, len(source_vocab), len(target_vocab))
    arrays = {name: np.asarray(array, dtype=np.float32) for name, array in weights.items()}
    _check_shapes(arrays, expected, path)
    np.savez(
        path,
        config=np.array(json.dumps(config._asdict())),
        source_vocab=np.array(list(source_vocab)),
        target_vocab=np.array(list(target_vocab)),
        **arrays,
    )


def _check_shapes(arrays, expected, path):
    missing, extra = sorted(set(expected) - set(arrays)), sorted(set(arrays) - set(expected))
    if missing or extra:
        raise CorruptWeightsError(
            f"{path}: weights do not match the declared architecture"
            + (f"; missing {', '.join(missing[:5])}" if missing else "")
            + (f"; unexpected {', '.join(extra[:5])}" if extra else "")
        )
    for name, shape in expected.items():
        if tuple(arrays[name].shape) != shape:
            raise CorruptWeightsError(
                f"{path}: weight {name!r} has shape {tuple(arrays[name].shape)}, "
                f"but the declared architecture needs {shape}"
            )


def load_translator(path=None):
    """The model in ``path`` (default :data:`TRANSLATOR_PATH`), every name and shape checked.

    Raises
    ------
    TranslatorUnavailableError
        When the file does not exist (it says how to create it).
    CorruptWeightsError
        When a weight is missing or has the wrong shape, or the file is not a model.
    """
    path = Path(TRANSLATOR_PATH if path is None else path)
    if not path.is_file():
        raise TranslatorUnavailableError(
            f"The translator's weights ({path.name}) are missing; create them with "
            f"`{TRAIN_COMMAND}` (a few minutes on a CPU; needs PyTorch)."
        )
    try:
        with np.load(path, allow_pickle=False) as archive:
            stored = {name: archive[name] for name in archive.files}
        config = TranslatorConfig(**json.loads(str(stored.pop("config"))))
        source_vocab = tuple(str(w) for w in stored.pop("source_vocab"))
        target_vocab = tuple(str(w) for w in stored.pop("target_vocab"))
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as error:
        raise CorruptWeightsError(f"{path}: not a translator weights file ({error})") from error
    missing_tokens = {PAD, UNK} - set(source_vocab) | {PAD, START, END} - set(target_vocab)
    if missing_tokens:
        raise CorruptWeightsError(f"{path}: vocabularies lack {sorted(missing_tokens)}")
    expected = parameter_shapes(config, len(source_vocab), len(target_vocab))
    _check_shapes(stored, expected, path)
    params = {}
    for name in expected:
        array = stored[name].astype(np.float32)
        array.flags.writeable = False  # shared between sessions: nobody may change it
        *parents, leaf = (
            int(p) if p.isdigit() else _ENGINE_NAMES.get(p, p) for p in name.split(".")
        )
        node = params
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = array
    for stack in ("encoder", "decoder"):
        params[stack] = [params[stack][i] for i in range(config.n_layers)]
    return Translator(
        config,
        source_vocab,
        target_vocab,
        params,
        {word: i for i, word in enumerate(source_vocab)},
        {token: i for i, token in enumerate(target_vocab)},
    )


# --- one function per operation ---------------------------------------------------------


def decoder_layer(y, memory, n_heads, attn, ln_1, cross_attn, ln_2, ffn, ln_3):
    """One post-LayerNorm decoder layer (Vaswani et al. 2017, section 3.1).

    Causal self-attention, then cross-attention (section 3.2.3: queries from the
    decoder, keys and values from the encoder's output), then the feed-forward block,
    each added to the stream and normalised, as in :func:`engine.layers.encoder_layer`.

    Parameters
    ----------
    y : ndarray of shape (t, d_model), the decoder's running representation
    memory : ndarray of shape (n_src, d_model), the encoder's output
    n_heads : int
    attn, ln_1, cross_attn, ln_2, ffn, ln_3 : mappings of this layer's weights

    Returns
    -------
    y : ndarray of shape (t, d_model)
    self_weights : ndarray of shape (n_heads, t, t), zero above the diagonal
    cross_weights : ndarray of shape (n_heads, t, n_src)
    """
    masked = multi_head_attention(y, **attn, n_heads=n_heads, mask=causal_mask(len(y)))
    y = layer_norm(y + masked.output, **ln_1, eps=LAYER_NORM_EPS)
    cross = multi_head_attention(y, **cross_attn, n_heads=n_heads, memory=memory)
    y = layer_norm(y + cross.output, **ln_2, eps=LAYER_NORM_EPS)  # -> [t, d_model]
    y = layer_norm(y + feed_forward(y, **ffn)[1], **ln_3, eps=LAYER_NORM_EPS)
    return y, masked.weights, cross.weights


def _embed(ids, table):
    """Token embeddings × √d_model plus sinusoidal positions (Vaswani et al. 2017, §3.4–3.5)."""
    n, d_model = len(ids), table.shape[1]
    positions = sinusoidal_positional_encoding(n, d_model).astype(np.float32)
    return table[np.asarray(ids, dtype=np.intp)] * np.float32(np.sqrt(d_model)) + positions


class Encoding(NamedTuple):
    """The encoder's output and its self-attention.

    Attributes
    ----------
    memory : ndarray of shape (n_src, d_model)
    self_attention : ndarray of shape (n_layers, n_heads, n_src, n_src)
    """

    memory: np.ndarray
    self_attention: np.ndarray


class DecoderRun(NamedTuple):
    """The decoder run once over ``t`` input tokens.

    Attributes
    ----------
    logits : ndarray of shape (t, n_vocab), row ``i`` scores the token after input ``i``
    self_attention : ndarray of shape (n_layers, n_heads, t, t)
    cross_attention : ndarray of shape (n_layers, n_heads, t, n_src)
    """

    logits: np.ndarray
    self_attention: np.ndarray
    cross_attention: np.ndarray


@blas.one_thread
def encode(model, source_ids, parallel=True):
    """Run the encoder stack over source token ids.

    Parameters
    ----------
    model : Translator
    source_ids : sequence of n_src int, n_src >= 1
    parallel : bool or int, as :func:`engine.layers.encoder_layer` takes it: the same bits

    Returns
    -------
    Encoding
    """
    x = _embed(source_ids, model.params["source_embedding"])  # [n_src, d_model]
    weights = []
    for block in model.params["encoder"]:
        layer = encoder_layer(
            x, **block, n_heads=model.config.n_heads, eps=LAYER_NORM_EPS, parallel=parallel
        )
        x = layer.output
        weights.append(layer.attention.weights)  # [n_heads, n_src, n_src]
    return Encoding(x, np.stack(weights))


@blas.one_thread
def decode(model, memory, target_ids):
    """Run the decoder stack over the target tokens so far, reading the encoder's output.

    Parameters
    ----------
    model : Translator
    memory : ndarray of shape (n_src, d_model)
    target_ids : sequence of t int, starting with the start token

    Returns
    -------
    DecoderRun
    """
    y = _embed(target_ids, model.params["target_embedding"])  # [t, d_model]
    self_weights, cross_weights = [], []
    for layer in model.params["decoder"]:
        y, masked, cross = decoder_layer(y, memory, model.config.n_heads, **layer)
        self_weights.append(masked)
        cross_weights.append(cross)
    logits = y @ model.params["out"]["w"] + model.params["out"]["b"]  # [t, n_vocab]
    return DecoderRun(logits, np.stack(self_weights), np.stack(cross_weights))


# --- tokens and the greedy loop ---------------------------------------------------------


def split_source(text):
    """Source words: lower-cased runs of letters and digits, hyphenated words kept whole.

    Punctuation and spacing are dropped, so "The Third of March, 2021." reads as
    ``["the", "third", "of", "march", "2021"]``.
    """
    return _WORD.findall(str(text).lower())


def split_target(text):
    """Target tokens: one per character."""
    return list(text)


def read_source(model, text):
    """The source's words and ids, and the words the model has never seen.

    Raises
    ------
    UnreadableSourceError
        When the text has no words or more than :data:`MAX_SOURCE_WORDS`.

    Returns
    -------
    words : list of str
    ids : list of int (unknown words get :data:`UNK`'s id)
    unknown : list of str, each unknown word once, in order
    """
    words = split_source(text)
    if not words:
        raise UnreadableSourceError("There is nothing to translate: the source has no words.")
    if len(words) > MAX_SOURCE_WORDS:
        raise UnreadableSourceError(
            f"The source has {len(words)} words; the translator reads at most "
            f"{MAX_SOURCE_WORDS} (it was trained on dates of six words at most)."
        )
    unknown = list(dict.fromkeys(w for w in words if w not in model.source_index))
    unk = model.source_index[UNK]
    return words, [model.source_index.get(w, unk) for w in words], unknown


class DecodingStep(NamedTuple):
    """One turn of the greedy loop.

    Attributes
    ----------
    inputs : tuple of t str, the decoder's input: the start token and what it wrote so far
    token : str, the token written at this step (the arg-max)
    probability : float, the softmax probability of ``token``
    self_attention : ndarray of shape (n_layers, n_heads, t, t), causal
    cross_attention : ndarray of shape (n_layers, n_heads, t, n_src)
    """

    inputs: tuple
    token: str
    probability: float
    self_attention: np.ndarray
    cross_attention: np.ndarray

    @property
    def mean_cross_attention(self):
        """Cross-attention averaged over heads, shape (n_layers, t, n_src): the alignment."""
        return self.cross_attention.mean(axis=1)


class Translation(NamedTuple):
    """A greedy translation and everything the decoder page draws.

    Attributes
    ----------
    source : tuple of n_src str, the words as read
    unknown : tuple of str, source words the model never saw (read as :data:`UNK`)
    tokens : tuple of str, the output without start and end tokens
    text : str, the tokens joined
    finished : bool, True when decoding stopped on the end token within ``max_len``
    encoder_attention : ndarray of shape (n_layers, n_heads, n_src, n_src)
    steps : tuple of DecodingStep, one per token written (the end token included)
    """

    source: tuple
    unknown: tuple
    tokens: tuple
    text: str
    finished: bool
    encoder_attention: np.ndarray
    steps: tuple


@blas.one_thread
def translate(model, source_text, max_len=16, parallel=True):
    """Greedy decoding: write the most likely token, feed it back, stop at the end token.

    Each step runs the decoder over the whole prefix again, as the explainer's
    ``translate()`` does, so step ``t`` has ``t`` queries; a key-value cache would give
    the same numbers faster but hide the growing mask this page is about.

    Parameters
    ----------
    model : Translator
    source_text : str
    max_len : int >= 1, the most tokens to write, the end token included
    parallel : bool or int, the encoder's (:func:`encode`): the same bits

    Raises
    ------
    UnreadableSourceError
        When the source has no words or too many (see :func:`read_source`).

    Returns
    -------
    Translation
    """
    if max_len < 1:
        raise ValueError(f"max_len must be at least 1, got {max_len}")
    words, ids, unknown = read_source(model, source_text)
    encoding = encode(model, ids, parallel)
    written = [model.target_index[START]]
    steps = []
    for _ in range(max_len):
        run = decode(model, encoding.memory, written)
        probabilities = softmax(run.logits[-1].astype(np.float64))  # the last row predicts
        next_id = int(np.argmax(probabilities))
        steps.append(
            DecodingStep(
                tuple(model.target_vocab[i] for i in written),
                model.target_vocab[next_id],
                float(probabilities[next_id]),
                run.self_attention,
                run.cross_attention,
            )
        )
        written.append(next_id)
        if model.target_vocab[next_id] == END:
            break
    finished = steps[-1].token == END
    tokens = tuple(step.token for step in (steps[:-1] if finished else steps))
    return Translation(
        tuple(words),
        tuple(unknown),
        tokens,
        "".join(tokens),
        finished,
        encoding.self_attention,
        tuple(steps),
    )
