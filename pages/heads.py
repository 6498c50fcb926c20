"""What heads do: an atlas of head roles, scored on repeated random tokens by our engine."""

import streamlit as st

from app.data import models, passes
from app.state import controls, session
from app.views import head_roles, long_head, tables
from app.widgets import model_box, notices
from engine import bert, checkpoint, roles

heading = st.container()
folder, model = model_box.chosen()
if isinstance(model, checkpoint.ModelUnavailableError):
    notices.model_missing()
config = model.config
heading.title(f"What heads do: {model_box.title(folder)}")
session.name_files(f"{model_box.file_name(folder)}-roles")
heading.caption(model_box.description(config, folder))

result = models.head_roles(folder)
if isinstance(result, Exception):
    st.error(controls.md_escape(str(result)), icon="🚫")
    st.stop()
n_roles, n_layers, n_heads = result.scores.shape
after = f" after {controls.md_escape(result.tokens[0])}" if result.start else ""
st.markdown(
    f"Each of the {n_layers * n_heads} heads is scored on {result.repeat} random tokens of "
    f"the model's ordinary vocabulary (no special tokens){after}, repeated twice, once per "
    f"seed ({', '.join(map(str, result.seeds))}): a score is its mean over the seeds, "
    "after ± their standard deviation. On the repeat, a head that copies from context "
    "shows it: the second half is predictable only from the first (Olsson et al. 2022)."
)
st.markdown(
    "\n".join(
        f"- **{head_roles.TITLES[role]}**: {head_roles.READS[role]}"
        + (f" (w = {result.window})" if role == "local" else "")
        for role in result.roles
    )
)
if not config.causal:
    st.info(
        "This model is an encoder: it reads both ways, so it is scored on previous-token, "
        "duplicate-token, sink and local attention, not on induction. An induction head is "
        "a causal model's way of predicting the next token from an earlier copy; an encoder "
        "sees the next token itself, so that pattern would measure nothing it needs."
    )

click = head_roles.show(
    st, "heads_grid", result, "Every head's score per role (click a cell to open the head)"
)
for k, role in enumerate(result.roles):
    st.markdown(head_roles.sentence(role, result.scores[k], result.spread[k]))
tables.show(
    st,
    [
        {"role": head_roles.TITLES[role], "layer": layer, "head": head}
        | {"score": score, "spread": sd}
        for k, role in enumerate(result.roles)
        for layer, head, score, sd in head_roles.strongest(result.scores[k], result.spread[k])
    ],
    digits={"score": 3, "spread": 3},
)

st.header("One head")
cell = head_roles.clicked("heads_grid", click, n_roles, n_layers, n_heads)
first_role = "induction" if "induction" in result.roles else "previous_token"
if cell is not None:
    st.session_state["heads_role"] = result.roles[cell[0]]
    st.session_state["heads_layer"], st.session_state["heads_head"] = cell[1], cell[2]
elif "heads_role" not in st.session_state or st.session_state["heads_role"] not in result.roles:
    k = result.roles.index(first_role)
    best = head_roles.strongest(result.scores[k], result.spread[k], 1)[0]
    st.session_state["heads_role"] = first_role
    st.session_state["heads_layer"], st.session_state["heads_head"] = best[0], best[1]
left, middle, right = st.columns(3)
role = left.selectbox("Role", result.roles, key="heads_role", format_func=head_roles.TITLES.get)
layer = middle.selectbox("Layer", range(n_layers), key="heads_layer")
head = right.selectbox("Head", range(n_heads), key="heads_head")
k = result.roles.index(role)
st.markdown(
    f"Layer {layer}, head {head}: {head_roles.TITLES[role]} score "
    f"{result.scores[k, layer, head]:.3f} ± {result.spread[k, layer, head]:.3f}."
)
session.name_files(f"{model_box.file_name(folder)}-l{layer}-h{head}")
left, right = st.columns(2)
head_roles.show_pattern(
    left,
    "heads_pattern",
    result.attentions[layer, head],
    result.tokens,
    f"On the repeated tokens (seed {result.seeds[0]}): the {head_roles.TITLES[role]} line",
    head_roles.diagonal(role, result.start, result.repeat, len(result.ids)),
)
text = st.session_state["text"]
run = models.run(folder, text)
if isinstance(run, bert.BertRun):
    labels = run.labels
    if len(labels) > passes.LONG_TOKENS:  # 16 million cells at 4,096 tokens: drawn as tiles
        tiles = models.head_tiles(folder, text, layer, head, long_head.OVERVIEW_TILES)
        long_head.show_tiles(right, "heads_text", tiles, "On the text on screen")
    else:
        weights = run.attentions[layer, head]
        head_roles.show_pattern(right, "heads_text", weights, labels, "On the text on screen")
else:
    right.info(controls.md_escape(str(run)) if isinstance(run, Exception) else "No tokens.")
st.caption(
    f"The scores: engine/roles.py, R = {result.repeat}, w = {result.window}, seeds "
    f"{result.seeds}; the roles scored here: "
    + ", ".join(head_roles.TITLES[role] for role in roles.roles_of(config))
    + "."
)
