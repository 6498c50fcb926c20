"""Multi-head attention: split Q, K, V into heads, attend per head, concatenate, mix with W_O."""

import streamlit as st

from app.lecture.presentation import control_hint
from app.views import arithmetic, equation, gqa, heatmap, line_view, multi_head
from app.widgets import notices, pickers
from app.words import equations, wording
from engine.attention import kv_head_of

st.title("Multi-head attention")
equation.show(equations.MULTI_HEAD)
st.caption(
    "Each head gets its own slice of the Q, K and V columns, attends on its own, and the "
    "heads' outputs are joined side by side and mixed by W_O. "
    + wording.INDEXING
    + " Vaswani et al. (2017, §3.2.2) count heads from 1: their head₁ is head 0 here."
)

settings, tokenization, run = notices.layer_or_stop()
labels = tokenization.labels
mha = run.attention
n_heads, n, d_head = mha.q.shape
if settings.trained:
    st.caption(
        wording.trained_heads(settings)
        + control_hint(
            " Choose “Random (seeded)” under Weights to set the number of heads yourself."
        )
    )
else:
    st.caption(
        notices.weights_note(settings, 0) + control_hint(" Set the number of heads in the sidebar.")
    )

st.metric("Heads × features per head", f"{n_heads} × {d_head} = {n_heads * d_head}")
heatmap.show_features(
    st, "mh_q", run.q, labels, "Q, with each head's columns marked", column_groups=n_heads
)
entropy = multi_head.entropy_table(mha.weights)
stat = [f"{bits:.2f} bits" for bits in entropy["mean entropy (bits)"]]
click = multi_head.show(st, "mh_heads", mha.weights, labels, stat=stat, clicks=True)
clicked_head = arithmetic.clicked_head("mh_heads", click, n_heads)
arithmetic.panel(
    arithmetic.clicked_cell("mh_heads", click, n, n),
    (mha.q[clicked_head], mha.k[clicked_head], mha.v[clicked_head]),
    mha.heads.scale,
    run.mask,
    labels,
    head=clicked_head,
)
st.dataframe(entropy, hide_index=True)
st.subheader("Line view")
st.caption(
    "The same heads as BertViz draws them: each query token on the left, a line to each key "
    "on the right it attends to, one colour per head. Point at a token for its lines alone; "
    "click it to keep them."
)
heads, threshold = line_view.controls("mh_lines", n_heads, clicked_head)
line_view.show(
    st,
    "mh_lines",
    mha.weights,
    labels,
    heads,
    threshold,
    line_view.token_picker(st, "mh_lines_token", labels),
    f"{n_heads} head{'s' if n_heads > 1 else ''}",
    picker="mh_lines_token",
)
left, right = st.columns(2)
heatmap.show_features(
    left, "mh_concat", mha.concat, labels, "Concat(head outputs)", column_groups=n_heads
)
heatmap.show_features(
    right,
    "mh_output",
    mha.output,
    labels,
    "Output = Concat · W_O" + (" + b_O" if getattr(run.weights, "b_o", None) is not None else ""),
)

if settings.trained and settings.config.kv_heads < settings.config.n_heads:
    st.subheader("Grouped-query attention")
    st.caption(wording.grouped_heads(settings.config))
    kv_of = kv_head_of(settings.config.n_heads, settings.config.kv_heads)
    gqa.show(st, "mh_gqa", kv_of, pickers.shared_head(run))
