"""Attention: raw scores, scaling, softmax, weights and output, with the scale as a live control."""

import streamlit as st

from app import live
from app.data import layers, models, passes
from app.state import controls, session, weights
from app.views import attention_maps, bars, equation, sinks
from app.widgets import interactive, long_scale, notices
from app.words import equations, wording

st.title("Scores → softmax → weights → output")
equation.show(equations.ATTENTION)
st.caption(
    "Drag the scale: small values flatten every row toward uniform, large ones make each row "
    "one-hot on its largest score. The panel below measures it."
)

settings, tokenization, _, head = notices.head_or_stop()  # the live head reads its layer
labels = tokenization.labels
long = len(labels) > passes.LONG_TOKENS  # each stop from the server, as tiles
if long:
    zoom = long_scale.head_section(settings, head, labels)
    equation.show(equations.SOFTMAX)
    st.caption(
        "The raw scores do not depend on the scale; everything below the slider does, and "
        "is computed again when it is released."
    )
else:
    right = live.head_section(settings, head, labels)  # a head switch in place; the raw scores
    equation.show(equations.SOFTMAX, right)
    right.caption(
        "The raw scores do not depend on the scale; everything below the slider does, and "
        "redraws as it moves."
    )


def random_against_trained(name):
    """Model ``name``'s head beside random weights of its shape on the same tokens, at its scale."""
    config = controls.trained_config(name)
    shape = f"{config.d_model} features, {config.n_heads} heads of {config.d_head}"
    if not st.toggle(
        "Random against trained: this head before and after training, side by side",
        key="attention_compare",
        help=f"The same tokens, sizes ({shape}), scale 1/√{config.d_head} and mask; only "
        "training differs.",
        persist_state="session",
    ):
        return
    values = session.current()
    layer, shown = (
        (values["layer"], values["head"]) if settings.trained else controls.default_head(name)
    )
    causal = values["causal"] or config.causal
    pair = layers.random_and_trained(name, settings.text, layer, values["seed"], None, causal)
    if pair is None:
        st.info(f"{controls.short_name(name)} cannot read this text; shorten it to compare.")
        return
    tokens, untrained, trained = pair[0], pair[1][shown], pair[2][shown]
    query = st.session_state.get("attention_query") if settings.trained else None
    if query is None or query >= len(tokens):
        query = wording.default_query(tokens)
    trained_name = f"{controls.short_name(name)}, {wording.layer_head(layer, shown)}"
    names = (f"Random (seeded), head {shown}", trained_name)
    st.caption(
        wording.random_and_trained(tokens, query, untrained[query], trained[query], names[1])
        + f" Both at the scale 1/√{config.d_head}, whatever the slider below says."
    )
    rows = dict(zip(names, (untrained[query], trained[query]), strict=True))
    bars.show_compared(st, "att_compare_bars", rows, tokens, tokens[query])
    random_side, trained_side = st.columns(2)
    attention_maps.show_weights(random_side, "att_random", untrained, tokens, names[0])
    attention_maps.show_weights(trained_side, "att_trained", trained, tokens, names[1])


compared = weights.comparison_model(session.current())
if compared is not None and long:
    st.caption(
        f"This text is {len(labels):,} tokens: random against trained weights, which runs a "
        f"random model's every head too, is offered for texts of at most {passes.LONG_TOKENS}."
    )
elif compared is not None:
    random_against_trained(compared)
if long:
    long_scale.scale_section(settings, head, labels, zoom)
    st.caption(
        f"The interactive page of this view is offered for texts of at most "
        f"{passes.LONG_TOKENS} tokens: it holds every stop's weights."
    )
else:
    live.scale_section(settings, head, labels)
    interactive.scale_page(st, settings, head, labels)

if settings.trained and settings.config.causal:  # a decoder's sinks: where its spare weight goes
    st.subheader("Attention sinks")
    st.caption(wording.SINKS)
    found = models.sinks(settings.weights, settings.text, long)  # long: from the summaries
    sinks.show(st, "att_sinks", found, labels, long)
    st.markdown(controls.md_escape(sinks.sentence(found, labels, long)))
