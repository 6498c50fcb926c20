"""Attention Explorer's engine: every number the app shows, in pure, stateless NumPy.

No Streamlit, Plotly or pandas here; randomness only from explicit seeds; the same
inputs give bit-identical outputs on any machine, whatever its CPUs and threads, for
matrix products run with BLAS on one thread (:mod:`engine.blas`). Importing the engine
changes nothing in the process; running it, nothing but idle threads, which a layer of
96 tokens or more makes to compute parts of its sums, one fewer than the CPUs the process
may use (:mod:`engine.parts`). Row
convention (tokens are rows, as in the papers) unless a module says otherwise;
:mod:`engine.book` holds the textbook's column convention.

Dimension vocabulary, used in every docstring and shape comment:

==========  ==============================================================
n           tokens in the sequence (self-attention: n_q = n_k = n)
n_q         queries (rows of the attention matrix)
n_k         keys and values (columns of the attention matrix)
d_model     features per token in the residual stream
n_heads     attention heads (query heads)
n_kv_heads  key/value heads in grouped-query attention, a divisor of n_heads
n_past      tokens held in a decoder's key/value cache, before the new ones
d_head      features per head, d_model // n_heads (or a checkpoint's head_dim)
d_k         features of a query or key (d_head inside multi-head attention)
d_v         features of a value
n_vocab     tokens in a pretrained model's vocabulary
N, D        the book's names for n and d_model (column convention)
==========  ==============================================================
"""

from engine import book
from engine.arithmetic import cell_arithmetic
from engine.attention import (
    AttentionResult,
    MultiHeadResult,
    attention_loop,
    attention_over_scales,
    causal_mask,
    merge_heads,
    multi_head_attention,
    scaled_dot_product_attention,
    split_heads,
)
from engine.efficient import linear_attention
from engine.positional import (
    learned_positional_encoding,
    position_similarity,
    rotary_embedding,
    sinusoidal_positional_encoding,
)
from engine.saturation import (
    SaturationStats,
    entropy_bits,
    saturation,
    saturation_sweep,
    softmax_jacobian_norm,
)
from engine.scores import softmax
from engine.tokenize import MAX_TOKENS, Tokenization, TokenizerUnavailableError, tokenize
from engine.toy import ToyRun, run_toy, token_embeddings, toy_weights

__all__ = [
    "MAX_TOKENS",
    "AttentionResult",
    "MultiHeadResult",
    "SaturationStats",
    "Tokenization",
    "TokenizerUnavailableError",
    "ToyRun",
    "attention_loop",
    "attention_over_scales",
    "book",
    "causal_mask",
    "cell_arithmetic",
    "entropy_bits",
    "learned_positional_encoding",
    "linear_attention",
    "merge_heads",
    "multi_head_attention",
    "position_similarity",
    "rotary_embedding",
    "run_toy",
    "saturation",
    "saturation_sweep",
    "scaled_dot_product_attention",
    "sinusoidal_positional_encoding",
    "softmax",
    "softmax_jacobian_norm",
    "split_heads",
    "token_embeddings",
    "tokenize",
    "toy_weights",
]
