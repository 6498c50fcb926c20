"""Multi-head attention: split Q, K, V into heads, attend per head, concatenate, mix with W_O."""

import streamlit as st

from app import arithmetic, equations, figures, line_view, render, tables, wording
from app.lecture import presentation
from app.widgets import notices

st.title("Multi-head attention")
render.equation(equations.MULTI_HEAD)
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
        f"MiniLM's layer {settings.layer}: its 12 trained heads of 32 features, their real "
        "split of Q (biases included), their concatenation and the layer's W_O (and b_O)."
        + presentation.control_hint(
            " Choose “Random (seeded)” under Weights to set the number of heads yourself."
        )
    )
else:
    st.caption(
        notices.weights_note(settings, 0)
        + presentation.control_hint(" Set the number of heads in the sidebar.")
    )

st.metric("Heads × features per head", f"{n_heads} × {d_head} = {n_heads * d_head}")
render.chart(
    st,
    figures.token_features_heatmap(
        run.q, labels, "Q, with each head's columns marked", column_groups=n_heads
    ),
    key="mh_q",
    table=tables.token_features(run.q, labels),
)
entropy = tables.head_entropy(mha.weights)
click = render.chart(
    st,
    figures.heads_heatmaps(
        mha.weights, labels, stat=[f"{bits:.2f} bits" for bits in entropy["mean entropy (bits)"]]
    ),
    key="mh_heads",
    table=tables.panels(mha.weights, [f"head {h}" for h in range(n_heads)], labels, labels),
    clicks=True,
)
clicked_head = arithmetic.clicked_head("mh_heads", click, n_heads)
arithmetic.panel(
    arithmetic.clicked_cell("mh_heads", click, n, n),
    (mha.q[clicked_head], mha.k[clicked_head], mha.v[clicked_head]),
    mha.heads.scale,
    run.mask,
    labels,
)
st.dataframe(entropy, hide_index=True)
st.subheader("Line view")
st.caption(
    "The same heads as BertViz draws them: each query token on the left, a line to each key "
    "on the right it attends to, one colour per head. Point at a token for its lines alone; "
    "click it to keep them."
)
heads, threshold = line_view.controls("mh_lines", n_heads, clicked_head)
line_view.draw(
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
render.chart(
    left,
    figures.token_features_heatmap(
        mha.concat, labels, "Concat(head outputs)", column_groups=n_heads
    ),
    key="mh_concat",
    table=tables.token_features(mha.concat, labels),
)
render.chart(
    right,
    figures.token_features_heatmap(
        mha.output, labels, "Output = Concat · W_O" + (" + b_O" if settings.trained else "")
    ),
    key="mh_output",
    table=tables.token_features(mha.output, labels),
)
