"""Efficient attention: linear and sparse patterns against full softmax, and what each costs."""

import inspect
import math

import streamlit as st

from app.data import efficient, long_layers, passes
from app.lecture.presentation import control_hint
from app.views import attention_maps, cost, equation, long_head, tables
from app.widgets import notices, pickers
from app.words import equations, wording
from app.words.long_texts import efficient_first
from engine.efficient import PATTERNS, linear_attention

st.title("Efficient attention")
equation.show(equations.LINEAR_ATTENTION)
st.caption(
    "Full softmax compares every query with every key: n² scores. Linear attention swaps "
    "the exponential for a kernel φ(q)·φ(k), so φ(K)ᵀV is summed once and each query reads "
    "it — O(n) work. Sparse patterns keep the softmax but let each query see only some "
    "keys (Katharopoulos et al. 2020, §3.2; Child et al. 2019, §4.3; Beltagy et al. 2020)."
    + control_hint(" The sidebar's “Mask future tokens” switch applies to every pattern.")
)

settings, tokenization, run, head = notices.head_or_stop()
labels = tokenization.labels
n = len(labels)
# A long text (a trained model's): its head as tiles with a zoom; the patterns, which need
# every weight of five variants and their differences, on its first LONG_TOKENS tokens.
first = passes.LONG_TOKENS if n > passes.LONG_TOKENS else None
if first:
    st.caption(efficient_first(n, len(PATTERNS), first, settings.causal))
    st.subheader("Full softmax over the whole text")
    reduction, rows, cols = long_head.controls(
        "efficient_reduction", "efficient_tiles", wording.default_query(labels), n
    )
    maps = long_layers.head_map(settings, head, "weights", reduction, rows, cols, *long_head.SIZES)
    title = f"Full softmax, head {head}"
    zoom = "efficient_tiles"
    long_head.show_map(st, "efficient_whole", maps, labels, rows, cols, title, zoom=zoom)
    labels = labels[:first]
    n = first

equation.show(equations.SPARSE_PATTERNS)
left, right = st.columns(2)
with left:
    window = pickers.bounded_slider(
        "Sliding window w: keys on each side", "efficient_window", 0, n - 1, min(4, n - 1)
    )
with right:
    stride = pickers.bounded_slider(
        "Stride / block length l", "efficient_stride", 1, n, max(2, round(math.sqrt(n)))
    )

patterns = efficient.efficient_patterns(settings, head, window, stride, first)


def pattern_cost(name, share):
    """A pattern's chart title: what share of the n² pairs it scores one by one."""
    if share == 0:
        return "every pair weighted, none scored: O(n)"
    return f"{share:.0%} of the n² pairs scored"


errors = efficient.efficient_errors(settings, head, window, stride, first)

st.subheader(f"The patterns on its first {n} tokens" if first else "The patterns on this sentence")
grid = [column for _ in range(3) for column in st.columns(2)]
for column, pattern, share in zip(grid, patterns, errors["pairs scored"], strict=False):
    title = f"{pattern.name} · {pattern_cost(pattern.name, share)}"
    key = "efficient_" + pattern.name.split(" ")[0]
    attention_maps.show_weights(column, key, pattern.weights, labels, title)
# The comparison at the page's width: in a half-width column its last columns were cut off.
with st.container():
    st.markdown("**How far each pattern is from full softmax**")
    tables.show(st, errors, percent=("pairs weighted", "pairs scored"))
    st.caption(
        "Pairs weighted: the share of (query, key) pairs with a weight; pairs scored: the "
        "share whose q·k the pattern needs. Linear attention weights every "
        "pair but scores none: it sums φ(k)vᵀ once, O(n), and draws its implied weights "
        "here only to compare them. ΔA: weights minus the full softmax weights; ΔAV: "
        "the same for the outputs A·V. "
        + (
            "These are a trained head's weights, but the model was trained with "
            + ("causal" if settings.trained and settings.config.causal else "full")
            + " attention: the errors say how far each pattern moves it, untuned."
            if settings.trained
            else "The toy weights are random and untrained, so these errors measure how "
            "different each pattern is, not how well a trained model would cope."
        )
    )

st.subheader("Measured cost against n")
st.caption(
    "Engine calls on one head (d_k = d_v = 64) for n = 64 … 8192: wall time and the peak "
    "memory NumPy allocated (tracemalloc). Dashed: ∝ n², dotted: ∝ n. Softmax keeps its "
    "(n, n) scores and weights; linear attention never forms them."
)
measured = st.session_state.get("efficient_measured", False)
if st.button("Measure on this machine", key="efficient_measure", disabled=measured):
    st.session_state["efficient_measured"] = measured = True
record = efficient.cost_measurement() if measured else efficient.cost_reference()
if record is None:
    st.info("No stored measurement was found; press “Measure on this machine”.")
else:
    # The shipped measurement is another machine's: its title says so, not "Measured on".
    made = "Measured on this machine" if measured else "Measured when the app was made"
    title = f"{made}: {record['machine']}"
    cost.show(st, "efficient_cost", record["rows"], title)
    st.markdown("**Log-log slopes, fitted over n ≥ 512** (2 means ∝ n², 1 means ∝ n)")
    tables.show(st, record["slopes"], digits={"time slope": 2, "memory slope": 2})

with st.expander("A formula that circulates in tutorials, and why it is not linear attention"):
    st.code(
        "KV = K.T @ V\n"
        "attention = Q @ KV\n"
        "normalizer = Q.sum(axis=1, keepdims=True) @ K.sum(axis=1, keepdims=True).T\n"
        "return attention / normalizer",
        language="python",
    )
    st.markdown(
        "Without a positive feature map the implied weights q·k can be negative, so they "
        "are not an average of the values; and the normaliser is an n × n matrix, which "
        "does not even broadcast against the n × d_v numerator (NumPy raises for n ≠ d_v). "
        "Kernel attention divides each query's row by one number, φ(qᵢ)·Σⱼ φ(kⱼ)."
    )
with st.expander("The code that ran"):
    st.code(inspect.getsource(linear_attention), language="python")
