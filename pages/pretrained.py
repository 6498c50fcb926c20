"""A real model, run in our own NumPy code: all-MiniLM-L6-v2, or a checkpoint folder of yours."""

import streamlit as st

from app import live
from app.data import models, passes
from app.lecture.presentation import control_hint
from app.state import controls, session
from app.views import (
    arithmetic,
    attention_maps,
    bars,
    compare,
    equation,
    gqa,
    head_finder,
    last_token,
    line_view,
    long_head,
    model_view,
    neuron_view,
    next_token,
    rotary,
    sinks,
    summary_grid,
    tables,
)
from app.widgets import compare_box, interactive, model_box, notices, pickers
from app.words import equations, minimal_pairs, wording
from engine import analysis, bert, checkpoint, families, layer_config
from engine.arithmetic import query_stages
from engine.attention import kv_head_of


def next_token_heading(config):
    """What a causal model's page says before its pass: the mask, and the temperature's slider.

    Written before the pass, so that once it is done the next token's bars are the first
    thing sent: the browser draws them without laying these out first.
    """
    window = config.sliding_window
    where = " in its local layers" if config.layer_types else ""
    st.info(
        "This model is causal: each token attends only to itself and the tokens before it"
        + (f", at most {window} tokens back{where} (its sliding window)" if window else "")
        + ". The mask is the model's own, as it was trained, not a what-if; every view below "
        "shows it (the upper triangle of each head is 0)."
    )
    st.header("Next token")
    st.caption(
        "The model predicts the next token from the last position: its logits z, and at "
        "temperature T the probabilities softmax(z / T). T acts on the output, not on the "
        "attention; it never changes the order of the tokens, only how sharp the choice is."
    )
    live.temperature_slider()


def next_token_section(folder, model, text, run):
    """A causal model's next token: live temperature, the last token's attention, generation."""
    live.temperature_bars(folder, text)
    last_token.show(st, "pretrained_last", run.last_token_attention, run.labels)
    generation_section(folder, model, text)


def generation_section(folder, model, text):
    """Generation at a button's press, kept for the text, model and settings it ran with."""
    st.subheader("Generate, token by token")
    left, middle, right = st.columns(3)
    n_new = left.slider("Tokens", 1, 8, 4, key="pretrained_gen_tokens")
    temperature = middle.select_slider(
        "Temperature (0: greedy)",
        models.TEMPERATURES,
        value=0.0,
        key="pretrained_gen_temperature",
        format_func=next_token.temperature_label,
    )
    seed = right.number_input("Seed (sampling)", 0, 2**31 - 1, 0, key="pretrained_gen_seed")
    asked = (folder, text, n_new, temperature, None if temperature == 0 else seed)
    # The result is kept for these settings: a new text, model or setting asks again.
    if st.button(f"Generate {n_new} tokens", key="pretrained_generate", type="primary"):
        st.session_state["pretrained_generated"] = asked
    if st.session_state.get("pretrained_generated") != asked:
        st.caption(
            "Generation runs when you ask: the pass over your text, then one token's work for "
            "each new token, against the keys and values the model has computed."
        )
        return
    show_generation(model, text, models.generation(*asked), temperature)


def show_generation(model, text, steps, temperature):
    """The continuation, the steps' table, and one step's attention behind its choice."""
    if not steps:
        st.info("The model's positions are full: it cannot read another token.")
        return
    continued = model.tokenizer.decode([s.id for s in steps])
    st.markdown(controls.md_escape(text) + " **→** " + controls.md_escape(continued))
    tables.show(st, next_token.steps_table(steps, temperature))
    step = 0
    if len(steps) > 1:  # one slider per length: a shorter run never holds a step past its end
        step = st.select_slider("Step", range(len(steps)), key=f"pretrained_step{len(steps)}")
    chosen = steps[step]
    last_token.show(
        st,
        "pretrained_step",
        chosen.attention,
        chosen.labels,
        step,
        next_token.token_label(chosen.token),
    )


heading = st.container()  # the title names the model the box below chooses
folder, model = model_box.chosen()
if isinstance(model, checkpoint.ModelUnavailableError):
    notices.model_missing()
config = model.config
heading.title(f"A pretrained model: {model_box.title(folder)}")
session.name_files(model_box.file_name(folder))  # files name the model, not the sidebar's
heading.caption(
    model_box.description(config, folder)
    + f" Its heads have learned relations between tokens: the head finder below ranks all "
    f"{config.n_layers * config.n_heads} of them by the weight from one token of your text "
    "to another."
)

text = st.session_state["text"]
ahead = st.empty()  # what needs no pass; a text the model cannot read is said in its place
if config.causal:
    with ahead.container():
        next_token_heading(config)
run = models.run(folder, text)
if isinstance(run, bert.TooLongError):
    ahead.warning(controls.md_escape(str(run)))
    st.stop()
if not isinstance(run, bert.BertRun):  # a causal model's text without tokens
    ahead.info("Type some text in the sidebar: this model adds no token of its own.")
    st.stop()

labels = run.labels
n = len(labels)
long = n > passes.LONG_TOKENS  # a head drawn as tiles with a zoom; some views need fewer
n_layers, n_heads = run.attentions.shape[:2]
kv_of = kv_head_of(config.n_heads, config.kv_heads)
grouped = config.kv_heads < config.n_heads
if config.causal:
    next_token_section(folder, model, text, run)
specials = [controls.md_escape(token) for token in model.special_tokens]  # <s>: not markup
hide_special = len(specials) == 2 and st.toggle(
    f"Hide {specials[0]} and {specials[1]}", key="pretrained_hide_special", persist_state="session"
)
shown = slice(1, -1) if hide_special and len(labels) > 2 else slice(None)

st.header("Head finder")
text_b = compare_box.text_box(folder)
run_b = compare_box.second_run(text_b, folder)
visible = compare_box.visible(config)  # a causal model's query sees back only
starts = minimal_pairs.start_tokens(
    text, labels, specials=model.special_tokens, visible=visible, continues=run.continues
)
query, key = pickers.query_and_key(
    compare_box.PICKERS_A, labels, starts, ("query", "key"), visible=visible
)
grid = models.head_grid(folder, text, query, key)
if run_b is None:
    head_finder.show(st, "pretrained_finder", grid, labels[query], labels[key])
    ranked = models.ranked_heads(folder, text, query, key)
    st.markdown(wording.finder_answer(ranked, labels[query], labels[key]))
    tables.show(st, [{"layer": h.layer, "head": h.head, "weight": h.weight} for h in ranked[:8]])
    best = ranked[0]
else:
    labels_b = run_b.labels
    words = labels[query], labels[key]
    starts_b = minimal_pairs.start_tokens(
        text_b, labels_b, words, model.special_tokens, visible, run_b.continues
    )
    query_b, key_b = pickers.query_and_key(
        compare_box.PICKERS_B,
        labels_b,
        starts_b,
        ("query_b", "key_b"),
        ("B's query token", "B's key token"),
        visible,
    )
    grid_b = models.head_grid(folder, text_b, query_b, key_b)
    changes = analysis.rank_changes(grid, grid_b)
    pairs = (labels[query], labels[key]), (labels_b[query_b], labels_b[key_b])
    names = minimal_pairs.names(text, text_b)
    compare.show(st, "pretrained_compare", (grid, grid_b), pairs, names, changes)
    best = changes[0]

st.header("Every head")
st.caption(
    "One number per head, computed during the pass for every head and averaged over the "
    "queries: where a sink head parks its attention, how spread a head is, how far back it "
    "looks, how much it reads the token before. Click a head to open it below."
)
field = st.selectbox(
    "Colour by",
    list(summary_grid.SUMMARIES),
    format_func=lambda name: summary_grid.SUMMARIES[name][0],
    key="pretrained_summary",
)
opened = summary_grid.show(st, "pretrained_summaries", run.summaries, field)
if opened is not None:  # before the sliders are drawn, which then show it
    st.session_state["pretrained_layer"], st.session_state["pretrained_head"] = opened

st.header("Head view")
left, right = st.columns(2)
layer = pickers.linked_slider(left, "Layer", n_layers, best.layer, "pretrained_layer", "view_layer")
head = pickers.linked_slider(right, "Head", n_heads, best.head, "pretrained_head", "view_head")
if grouped:
    right.caption(gqa.sharing(kv_of, head))
head_files = f"{model_box.file_name(folder)}-l{layer}-h{head}"  # the head's views' files
session.name_files(head_files)
token = pickers.token_picker("pretrained_token", labels, label="From token", default=query)
mask = layer_config.attention_mask(config, n, layer=layer)  # the model's own: None for an encoder
qk = (run.queries[layer, head], run.keys[layer, head], None)
if long:
    st.caption(
        f"{n:,} tokens: the whole map is drawn as tiles, each the maximum or the mean of its "
        f"block of queries and keys; the zoom draws the exact weights with their tokens once "
        f"it covers at most {long_head.ZOOM_CELLS} queries and {long_head.ZOOM_CELLS} keys. "
        "The zoom starts around the token picked above; click a tile to move it there."
    )
    reduction = st.radio(
        "Each tile shows its block's",
        list(long_head.REDUCTION_NAMES),
        format_func=long_head.REDUCTION_NAMES.get,
        horizontal=True,
        key="pretrained_reduction",
    )
    rows, cols = long_head.zoom_sliders(st, "pretrained_tiles", token, n)
    overview, zoomed, row = models.head_view(
        folder,
        text,
        layer,
        head,
        reduction,
        rows,
        cols,
        token,
        long_head.OVERVIEW_TILES,
        long_head.ZOOM_CELLS,
    )
    long_head.show_overview(
        st, "pretrained_tiles", overview, f"Layer {layer}, head {head}", rows, cols
    )
    left, right = st.columns(2)
    bars.show(left, "pretrained_bar", row, labels[cols[0] : cols[1]], labels[token], query=token)
    click = long_head.show_zoom(
        right, "pretrained_zoom", zoomed, labels, rows, cols, f"Zoom: layer {layer}, head {head}"
    )
    cell = arithmetic.clicked_cell("pretrained_zoom", click, rows[1] - rows[0], cols[1] - cols[0])
    cell = None if cell is None else (cell[0] + rows[0], cell[1] + cols[0])
else:
    weights = run.attentions[layer, head]
    left, right = st.columns(2)
    bars.show(
        left, "pretrained_bar", weights[token, shown], labels[shown], labels[token], query=token
    )
    click = attention_maps.show_weights(
        right,
        "pretrained_heatmap",
        weights[shown, shown],
        labels[shown],
        f"Layer {layer}, head {head}",
        clicks=True,
    )
    cell = arithmetic.clicked_cell("pretrained_heatmap", click, *weights[shown, shown].shape, shown)
arithmetic.panel(cell, qk, config.attn_scale, mask, labels, config.attn_softcap)

st.header("Line view")
st.caption(
    "BertViz's head view: each token on the left sends a line to every token on the right "
    "it attends to, one colour per head, darker and thicker for more weight. Point at a "
    "token to see only its lines (on the right, the lines into it); click it"
    + control_hint(", or pick it,")
    + " to keep them, and click it again for all."
)
heads, threshold = line_view.controls("pretrained_lines", n_heads, head)
if long:
    window = long_head.around(token, n, long_head.AROUND)
    st.caption(
        f"{n:,} tokens are too many lines to follow: the {window[1] - window[0]} tokens around "
        f"“{controls.md_escape(labels[token])}” (the head view's token), their weights on "
        f"each other alone. Its interactive page is offered for texts of at most "
        f"{passes.LONG_TOKENS} tokens."
    )
    line_view.show_window(
        st,
        "pretrained_lines",
        models.layer_window(folder, text, layer, window),
        labels[window[0] : window[1]],
        window[0],
        layer,
        heads,
        threshold,
    )
else:
    sentences = [(run, "pretrained_lines", "A" if run_b else "")]
    if run_b is not None and len(run_b.labels) <= passes.LONG_TOKENS:
        sentences.append((run_b, "pretrained_lines_b", "B"))
    elif run_b is not None:
        st.caption(f"B's line view needs a text of at most {passes.LONG_TOKENS} tokens.")
    for column, (this, chart_key, name) in zip(st.columns(len(sentences)), sentences, strict=True):
        line_view.show_layer(
            column, chart_key, this, layer, heads, threshold, name, hide_special=hide_special
        )
    interactive.line_page(st, text, layer, heads, threshold, folder, hide_special=hide_special)

st.header("Model view")
session.name_files(model_box.file_name(folder))  # every head: the same file and figure
windows = [config.window(i) for i in range(n_layers)] if config.layer_types else None
if n <= passes.EVERY_HEAD_MAX_TOKENS:
    model_view.show(
        st,
        "pretrained_model_view",
        models.thumbnails(folder, text, model_view.THUMBNAIL_MAX),
        n,
        (layer, head),
        kv_of if grouped else None,
        windows,
    )
    st.caption(
        "Each thumbnail's pixel is the largest weight of its block of queries and keys, so "
        "that a lone strong weight, such as a sink's first column, stays bright."
    )
else:
    why = f"It pools all {n_layers * n_heads} heads, each computed again at {n:,} × {n:,}."
    st.info(wording.needs_shorter("The model view", n, passes.EVERY_HEAD_MAX_TOKENS, why))
if windows and n <= passes.EVERY_HEAD_MAX_TOKENS:
    st.caption(
        f"{config.layer_types.count(families.LOCAL)} of the {n_layers} layers are local (the "
        f"orange band beside them): each token sees itself and the {config.sliding_window - 1} "
        "tokens before it (past the dotted line, no weight); the global layers (blue) see "
        "every token before it"
        + (
            f", each kind with its own rotary base ({config.rope_local_theta:g} local, "
            f"{config.rope_theta:g} global)."
            if config.rope_local_theta
            else "."
        )
    )
if grouped:
    st.subheader("Grouped-query attention")
    st.caption(
        f"This model computes {config.kv_heads} key/value head"
        f"{'s' if config.kv_heads > 1 else ''} for its {config.n_heads} query heads: each "
        "group of query heads (the columns marked with the same KV above) reads the same "
        "keys and values, and "
        "differs only by its queries. In red, the group of the head shown."
    )
    gqa.show(st, "pretrained_gqa", kv_of, head)

st.header("Neuron view")
session.name_files(head_files)
equation.show(equations.SOFTMAX)
seen = layer_config.visible_keys(config, token, layer)  # a causal token sees back only
keys = run.keys[layer, head, seen]
if grouped:
    st.caption(
        f"The keys k are key/value head {kv_of[head]}'s, the same for query heads "
        f"{', '.join(str(h) for h in range(n_heads) if kv_of[h] == kv_of[head])}"
        + (", after their rotation by position." if config.rotary else ".")
    )
if config.model_type in model_box.QK_NORMED:
    st.caption(
        f"q and k are shown as the scores use them: after the model's RMSNorm of each "
        f"head's {config.d_head} features (its q_norm and k_norm), then rotated by position."
    )
stages = query_stages(run.queries[layer, head, token], keys, config.attn_scale, config.attn_softcap)
seen_labels = labels[seen]
if long:  # the keys around the query, as the line view; their weights from every key
    near = long_head.keys_around(token, n, seen)
    shown_keys = range(n)[seen][near]
    st.caption(
        f"The keys from {shown_keys.start} to {shown_keys.stop - 1}, around "
        f"“{controls.md_escape(labels[token])}”, of the {len(range(n)[seen]):,} it sees: "
        "the weights are the softmax over all of them."
    )
    stages, keys, seen_labels = neuron_view.keys_shown(stages, keys, seen_labels, near)
neuron_view.show(st, "pretrained_neuron", stages, keys, seen_labels, labels[token])

st.header("Attention rollout")
session.name_files(model_box.file_name(folder))
st.caption(
    "Abnar & Zuidema (2020, §3): average the heads of each layer, add the identity for "
    "the residual connection and renormalise each row, Â = ½(W̄ + I), then multiply the "
    "layers' Â together, to follow attention from the output back to the input tokens."
)
if not long:
    rollout = models.rollout(folder, text)
    attention_maps.show_weights(
        st,
        "pretrained_rollout",
        rollout[shown, shown],
        labels[shown],
        f"Rollout through all {n_layers} layers",
    )
else:
    why = f"It averages every head of every layer, and its map is {n:,} × {n:,} cells."
    st.info(wording.needs_shorter("The rollout", n, passes.LONG_TOKENS, why))

st.header("Attention sinks")
session.name_files(model_box.file_name(folder))
st.caption(wording.SINKS)
found = models.sinks(folder, text, long)
if long:
    st.caption(
        f"Over {n:,} tokens, from the summaries the pass kept: the weight on the first token "
        "over every query, and how often each token is a query's strongest key."
    )
sinks.show(st, "pretrained_sinks", found, labels, long)
st.markdown(controls.md_escape(sinks.sentence(found, labels, long)))

if config.rotary:
    st.header("Rotary positions")
    session.name_files(head_files)
    st.caption(
        f"Head {head} of layer {layer}: the query vector of “{controls.md_escape(labels[query])}” "
        f"and the key vector of “{controls.md_escape(labels[key])}” (the head finder's pair), "
        "moved apart. Rotary positions turn q and k by their positions, so the score depends "
        "on the distance between them alone; removed, it is the same at every distance."
    )
    scores = models.rotary(folder, text, layer, head, query, key)
    rotary.show(
        st,
        "pretrained_rotary",
        scores,
        labels[query],
        labels[key],
        query - key if query >= key else None,
    )
    if config.rope_llama3:
        st.caption(
            "Llama 3's rope_scaling (type llama3): the pairs that turn slowly, over more "
            f"than {config.rope_llama3[2] / config.rope_llama3[0]:g} tokens a turn in "
            f"training, turn {config.rope_factor:g} times slower, so that they still tell "
            f"positions apart in a longer text; those faster than "
            f"{config.rope_llama3[2] / config.rope_llama3[1]:g} tokens a turn are kept, "
            "and those between are blended. The scores above use the scaled turns."
        )
        plain, scaled = models.rotary_frequencies(folder)
        rotary.show_wavelengths(
            st, "pretrained_rotary_wavelengths", plain, scaled, config.rope_llama3
        )
