"""Positional encoding: the tables, their similarity, their effect, and the permutation test."""

import streamlit as st

from app.data import encodings, layers, long_layers, passes, trained
from app.lecture.presentation import control_hint
from app.state import controls, session
from app.views import attention_maps, encoding_curves, equation, heatmap, long_head, tables
from app.widgets import notices
from app.words import equations, long_texts, wording

st.title("Positional encoding")
st.caption(
    "Attention by itself has no idea of order: shuffle the tokens and the outputs shuffle "
    "with them. A positional encoding gives each position its own signature."
)
equation.show(equations.SINUSOIDAL)
equation.show(equations.ROTARY)
st.caption(
    "Positions p and dimension pairs i count from 0, as on the charts; RoFormer counts i "
    "from 1, so its θ₁ is θ₀ here."
)

settings, tokenization, run, head = notices.head_or_stop(
    random_hint=control_hint(" Choose the encoding in the sidebar, under “Add positions”.")
)
labels = tokenization.labels
long = len(labels) > passes.LONG_TOKENS  # a trained model's: its weights as tiles, a zoom
values = session.current()
n, d_model = run.x.shape

n_positions = st.slider(
    "Positions to draw", 2, 512, min(max(n, 32), 512), key="pe_positions", persist_state="session"
)
config = settings.config
if settings.weights == "minilm":
    st.caption(
        f"MiniLM learned its own table: one {config.d_model}-feature vector per position, "
        f"{config.max_tokens} of them, added to the word embeddings. "
        f"{wording.LEARNED_POSITIONS_SCALE} The similarity below shows its structure. Beside "
        "it, the sinusoidal table and the cos/sin of rotary's angles at the same size."
    )
    kinds = {"minilm": "MiniLM", "sinusoidal": "Sinusoidal", "rotary": "Rotary"}
elif settings.trained:
    st.caption(wording.rotary_positions(settings))
    kinds = {settings.weights: f"{settings.label}'s rotary angles: cos and sin"}
elif values["pe"] == "none":
    st.info(
        "With the encoding “None”, nothing is added: every position's vector is zero, so "
        "there is no table to draw, and attention sees the tokens without their order."
        + control_hint(
            " Choose one under “Add positions” in the sidebar to see its table and what it changes."
        )
    )
    kinds = {}
else:
    kinds = {values["pe"]: f"{controls.PE_LABELS[values['pe']]} table (positions × dimensions)"}
positions = range(n_positions)
for column, (kind, name) in zip(
    st.columns(len(kinds)) if kinds else (), kinds.items(), strict=True
):
    encoding = encodings.encoding_table(kind, n_positions, d_model, values["seed"])
    features = encoding.shape[1]
    heatmap.show(
        column,
        f"pe_table_{kind}" if settings.trained else "pe_table",
        encoding,
        positions,
        heatmap.feature_labels(features),
        name,
        x_title="dimension",
        y_title="position",
        max_cols=heatmap.FEATURE_LIMIT,
        clip=True,
    )
    heatmap.show(
        column,
        f"pe_similarity_{kind}" if settings.trained else "pe_similarity",
        encodings.encoding_similarity(kind, n_positions, d_model, values["seed"]),
        positions,
        positions,
        "Cosine similarity" if settings.trained else "Cosine similarity between positions",
        x_title="position",
        y_title="position",
    )
sinusoidal = encodings.encoding_table("sinusoidal", n_positions, d_model, 0)
encoding_curves.show(st, "pe_curves", sinusoidal, encoding_curves.doubling_dims(d_model))
if not settings.trained and values["pe"] == "rotary":
    st.info(
        "Rotary encoding adds nothing to X: it rotates each head's queries and keys. The "
        "table shows the cosines and sines of its rotation angles; its effect shows in the "
        "attention weights below."
    )

st.subheader("Effect on attention")
if settings.trained:
    removed = "rotation of q and k" if config.rotary else "position embeddings"
    st.caption(
        f"Layer {settings.layer}, head {head}: the model as trained, and the same model run "
        f"with its {removed} removed (a what-if: it never ran so)."
    )
    s = settings
    own = "rotary" if config.rotary else "learned"
    with_title = f"Weights with {settings.label}'s {own} positions"
    if not long:
        without = trained.layer_run(s.weights, s.text, s.layer, s.scale, s.causal, positions=False)
else:
    if values["pe"] == "none":
        st.caption("With “None” both heatmaps are the same: no position was added.")
    without = layers.layer(settings.replace(pe="none"))
    with_title = f"Weights with {controls.PE_LABELS[values['pe']].lower()}"
if long:
    n = len(labels)
    st.caption(
        long_texts.long_maps(
            n,
            "the weights without and with positions",
            *long_head.SIZES,
            "Without positions the model runs a second pass over the text.",
        )
    )
    token = wording.default_query(labels)
    reduction, rows, cols = long_head.controls("pe_reduction", "pe_tiles", token, n)
    for key, title, positions in (
        ("pe_without", "Weights without positions", False),
        ("pe_with", with_title, True),
    ):
        maps = long_layers.head_map(
            settings, head, "weights", reduction, rows, cols, *long_head.SIZES, positions
        )
        long_head.show_map(st, key, maps, labels, rows, cols, title, zoom="pe_tiles")
else:
    left, right = st.columns(2)
    attention_maps.show_weights(
        left, "pe_without", without.attention.weights[head], labels, "Weights without positions"
    )
    attention_maps.show_weights(right, "pe_with", run.attention.weights[head], labels, with_title)

st.subheader("Is self-attention equivariant to permutation?")
equation.show(equations.PERMUTATION)
if settings.trained:
    st.caption(wording.permutation_test(settings, trained.model(settings.weights).special_tokens))
shuffle_seed = st.number_input(
    "Shuffle seed", 0, 10_000, 1, key="pe_shuffle", persist_state="session"
)
first = passes.LONG_TOKENS if long else None
if long:
    st.caption(
        f"This text is {len(labels):,} tokens: the test shuffles its first {first} alone, "
        "since it runs the whole model four times (in order and shuffled, with and without "
        "positions)."
    )
result = encodings.permutation_demo(
    settings.replace(scale=None, causal=False, pe="none"), shuffle_seed, first
)
st.text("Shuffled: " + " ".join(labels[i] for i in result["permutation"]))
tables.show(st, result["table"])
