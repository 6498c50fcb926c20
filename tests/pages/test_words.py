"""What the pages and the tour say, checked against the text on screen and the figures' data.

Every page and every tour step is opened with sentences other than the default passage
(one without "it"): no caption, title or chart names a token the text does not have, and
the sentences that give a weight, a head or a label agree with the figure beside them.
"""

import html
import re

import numpy as np
import pytest
from apptest_support import RANDOM, chart_z, charts, decode, open_app

import engine
from app import registry
from app.data import book, layers
from app.lecture import tour
from app.state import controls
from app.views import arithmetic, heatmap, style
from app.widgets import sidebar
from app.words import equations, wording
from engine.resources import minilm_dir

pytestmark = pytest.mark.skipif(minilm_dir() is None, reason="MiniLM is not installed")

LAWYER = "The lawyer asked the witness a question, but he was unwilling to answer it."
NO_IT = "Cats sleep most of the day, and dogs guard the house at night."
TROPHY = "The trophy would not fit in the suitcase because it was too big."
TEXTS = (LAWYER, NO_IT)

#: The sidebar's controls and options, which captions may name in quotes.
UI_NAMES = {
    *controls.WEIGHTS_LABELS.values(),
    *controls.PE_LABELS.values(),
    *controls.TOKENIZER_LABELS.values(),
    sidebar.CAUSAL_TOGGLE,
    "Add positions",
}
#: Sentence ends, which the summary page names in quotes.
PUNCTUATION = {".", "!", "?"}
QUOTED = (re.compile(r"“([^”]*)”"), re.compile(r"‘([^’]*)’"))
SHOWN = ("title", "header", "subheader", "caption", "markdown", "info", "warning", "success")


def plain(markdown):
    """Markdown as read: backslash escapes dropped."""
    return re.sub(r"\\(.)", r"\1", markdown)


def title_of(figure):
    title = figure.get("layout", {}).get("title", {})
    return html.unescape(title.get("text") or "" if isinstance(title, dict) else str(title))


def axis_names(figure):
    """Every category label the figure's traces draw on their axes, as shown (no padding)."""
    names = set()
    for trace in figure.get("data", []):
        for axis in ("x", "y"):
            values = trace.get(axis)
            if isinstance(values, list):
                names |= {html.unescape(str(v)).replace("\u200b", "") for v in values}
    return names


def said(at):
    """What the page wrote, as (where, text): its messages and its charts' titles."""
    out = [(kind, plain(str(el.value))) for kind in SHOWN for el in getattr(at, kind)]
    out += [(f"chart {key}", title_of(figure)) for key, figure in charts(at).items()]
    return out


def quoted(text):
    return [q for pattern in QUOTED for q in pattern.findall(text)]


def named_tokens_missing(at, text):
    """The quoted names on the page that are neither in ``text`` nor a control's name."""
    allowed = UI_NAMES | PUNCTUATION | {b.label for b in at.button}
    lowered = text.lower()
    missing = []
    for where, words in said(at):
        for name in quoted(words):
            bare = name.removeprefix("##").rstrip("…").lower()
            if name in allowed or name in wording.SPECIAL_TOKENS or bare in lowered:
                continue
            missing.append((where, name))
    return missing


def titles_naming_absent_tokens(at, text):
    """Chart titles that quote a token their own token axes do not draw."""
    wrong = []
    for key, figure in charts(at).items():
        names = axis_names(figure)
        if not any(name.lower() in text.lower() for name in names if name.isalpha()):
            continue  # not a token axis (heads, layers, features, sentences)
        for name in quoted(title_of(figure).split("<br>")[0]):
            if name.rstrip("…") not in names and not any(
                n.startswith(name.rstrip("…")) for n in names
            ):
                wrong.append((key, name))
    return wrong


PAGES = [page.script for page in registry.PAGES if page.script != "tour"]
VIEWS = [(page, None) for page in PAGES] + [("tour", step) for step in range(1, 10)]


@pytest.mark.parametrize("text", TEXTS, ids=["lawyer", "no-it"])
@pytest.mark.parametrize(("page", "step"), VIEWS, ids=[f"{p}{s or ''}" for p, s in VIEWS])
def test_no_page_names_a_token_its_text_lacks(page, step, text):
    at = open_app(
        page, {"text": text}, page_query={"step": str(step)} if step else None, timeout=180
    )
    assert not at.exception, [e.value for e in at.exception]
    assert named_tokens_missing(at, text) == []
    assert titles_naming_absent_tokens(at, text) == []


@pytest.mark.parametrize("step", range(1, 10))
def test_the_tour_on_random_weights_names_only_its_tokens(step):
    at = open_app("tour", {"text": NO_IT, **RANDOM}, page_query={"step": str(step)})
    assert not at.exception
    assert named_tokens_missing(at, NO_IT) == []
    assert titles_naming_absent_tokens(at, NO_IT) == []


def tour_words(at):
    """The sentences a tour step computed for its text: the markdown after the fixed text."""
    return plain(at.markdown[-1].value)


def open_step(step, text=None, **query):
    if text is not None:
        query["text"] = text
    at = open_app("tour", query, page_query={"step": str(step)}, timeout=180)
    assert not at.exception
    return at


def axis_labels_of(at, key):
    figure = charts(at)[key]
    return [html.unescape(v).replace("\u200b", "") for v in figure["data"][0]["y"]]


@pytest.mark.parametrize("text", [controls.DEFAULT_TEXT, LAWYER, NO_IT, TROPHY])
def test_tour_step_5_names_the_rows_strongest_key_and_its_weight(text):
    at = open_step(5, text)
    words = tour_words(at)
    found = re.search(
        r"“([^”]+)” spends (\d\.\d\d) of its budget of 1 on (itself|“([^”]+)”)", words
    )
    assert found, words
    query_label, weight, _, key_label = found.groups()
    labels = axis_labels_of(at, "tour_step_5")
    row = chart_z(at, "tour_step_5")[labels.index(query_label)]
    assert float(weight) == pytest.approx(row.max(), abs=0.005)
    strongest = labels[int(row.argmax())]
    assert (key_label or query_label) == strongest
    if "it" not in [label.lower() for label in labels]:
        assert "This text has no *it*" in at.markdown[-1].value
        assert "“it”" not in words


def test_tour_step_5_on_the_default_passage_keeps_its_lesson_without_overclaiming():
    words = tour_words(open_step(5))
    assert "“it” spends 0.43 of its budget of 1 on “restaurant”" in words
    assert "learned what" not in words  # the head's weight, not a claim about reference


@pytest.mark.parametrize("text", [controls.DEFAULT_TEXT, LAWYER, NO_IT])
def test_tour_step_6_names_what_both_bars_show(text):
    at = open_step(6, text)
    words = tour_words(at)
    found = re.search(
        r"Row “([^”]+)”: the random weights put their largest share, (\d\.\d+), on "
        r"(itself|“([^”]+)”); MiniLM's layer 3, head 1 puts (\d\.\d+) on (itself|“([^”]+)”)",
        words,
    )
    assert found, words
    query, w_random, _, k_random, w_trained, _, k_trained = found.groups()
    figure = charts(at)["tour_step_6"]
    keys = [html.unescape(v).replace("\u200b", "") for v in figure["data"][0]["x"]]
    for trace, weight, key in ((0, w_random, k_random), (1, w_trained, k_trained)):
        bars = chart_z_bars(figure, trace)
        assert float(weight) == pytest.approx(bars.max(), abs=0.0005)
        assert (key or query) == keys[int(bars.argmax())]
    assert query in title_of(figure)
    assert "restaurant" not in words or "restaurant" in text


def chart_z_bars(figure, trace):
    return decode(figure["data"][trace]["y"])


def test_tour_step_8_says_the_random_model_adds_no_positions_by_default():
    at = open_step(8, **RANDOM)
    title = title_of(charts(at)["tour_step_8"])
    assert "not added now" in title
    assert "adds no positions" in tour_words(at)
    at = open_step(8, pe="sinusoidal", **RANDOM)
    assert "not added" not in title_of(charts(at)["tour_step_8"])
    assert "adds the sinusoidal table" in tour_words(at)
    at = open_step(8, pe="learned", **RANDOM)
    assert title_of(charts(at)["tour_step_8"]).startswith("Learned (seeded) positions")


def stated_clip(title):
    found = re.search(
        r"colours clipped at\s±([\d.e+-]+) \(99th percentile\); \|max\|\s([\d.e+-]+)", title
    )
    return None if found is None else tuple(float(x) for x in found.groups())


def test_home_keeps_each_number_of_its_notes_with_the_word_before_it():
    """On a phone (390 px) the chart component wraps a title at its spaces: /'s note
    "colours clipped at ±1.64 (99th percentile); |max| 9.66" broke between |max| and 9.66.
    A no-break space joins each number to its word; the note still says both numbers."""
    notes = [
        title_of(figure).partition("<br>")[2]
        for figure in charts(open_app("home")).values()
        if "<br>" in title_of(figure)
    ]
    clipped = [note for note in notes if "clipped" in note]
    assert clipped, notes
    for note in notes:
        assert not re.search(r" [±−+-]?\d", note), note
    for note in clipped:
        assert re.search(r"at\u00a0±[\d.]+ .*\|max\|\u00a0[\d.]+", note), note


def test_tour_step_8_clips_minilms_learned_positions_and_says_where():
    at = open_step(8)
    figure = charts(at)["tour_step_8"]
    limit, largest = stated_clip(title_of(figure))
    trace = figure["data"][0]
    z = chart_z(at, "tour_step_8")
    assert trace["zmax"] == pytest.approx(limit, rel=1e-2)
    assert largest == pytest.approx(np.abs(z).max(), rel=1e-2)
    assert largest > 3 * limit


def test_tour_step_1_names_the_passages_own_word_pieces_and_its_lower_case_ids():
    words = tour_words(open_step(1))
    assert "“ambiance” is not in the vocabulary whole: it becomes “am”, “##bian”, “##ce”" in words
    assert "##ian”" not in words.replace("##bian", "")
    assert "“The” is looked up as “the”: both are id 1996" in words
    words = tour_words(open_step(1, NO_IT))
    assert "none is cut into pieces" in words
    assert "“Cats” is looked up in lower case, as id 8870" in words


def test_the_home_page_says_the_same_of_the_tokens_as_the_tour():
    at = open_app("home")
    settings = controls.Settings(text=controls.DEFAULT_TEXT, weights="minilm")
    tokenization = layers.tokens(settings)[0]
    expected = " ".join(wording.tokens_sentences(tokenization, "wordpiece"))
    assert expected in [c.value for c in at.caption]
    assert expected in open_step(1).markdown[-1].value


@pytest.mark.parametrize("convention", ["rows", "columns"])
def test_crop_captions_follow_the_drawn_matrix(convention):
    at = open_app("home", {"convention": convention})
    shown = charts(at)
    x = chart_z(at, "home_x")
    if convention == "rows":
        assert "(first 128 of 384 columns)" in title_of(shown["home_x"])
        assert x.shape[1] == 128
        assert "(first 128 of 384 rows)" in title_of(shown["home_wq"])
        assert chart_z(at, "home_wq").shape == (128, 32)
    else:
        assert "(first 128 of 384 rows)" in title_of(shown["home_x"])
        assert x.shape[0] == 128
        assert "(first 128 of 384 columns)" in title_of(shown["home_wq"])
        assert chart_z(at, "home_wq").shape == (32, 128)
        assert any("owns rows 32–63 of the layer's Ω_q" in c.value for c in at.caption)


def test_a_crop_caption_is_transposed_with_its_matrix():
    wide = np.zeros((384, 32))
    rows = heatmap.figure(wide, range(384), range(32), "W", max_rows=128)
    cols = heatmap.figure(wide, range(384), range(32), "W", max_rows=128, transpose=True)
    assert rows.layout.title.text == "W (first 128 of 384 rows)"
    assert np.shape(rows.data[0].z) == (128, 32)
    assert cols.layout.title.text == "W (first 128 of 384 columns)"
    assert np.shape(cols.data[0].z) == (32, 128)


def test_the_book_labels_permuted_columns_with_their_inputs():
    at = open_app("book")
    at.selectbox(key="book_permutation").set_value((1, 2, 0)).run()
    exercise = book.exercise()
    outputs = exercise["matrix"].X_prime  # x′0, x′1, x′2 as columns
    for key in ("book_perm_a", "book_perm_b"):
        figure = charts(at)[key]
        assert [html.unescape(v) for v in figure["data"][0]["x"]] == ["x′1", "x′2", "x′0"]
        z = chart_z(at, key)
        np.testing.assert_allclose(z[:, 0], outputs[:, 1], atol=1e-5)  # column x′1 is x′1


def test_a_masked_cells_steps_add_the_mask_after_the_scale():
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((3, 5, 4))
    mask = engine.causal_mask(5)
    masked = engine.cell_arithmetic(q, k, v, 1, 3, 0.5, mask)
    steps = dict(arithmetic.steps(masked, masked=True))
    assert steps["q_i · k_j"] == f"{q[1] @ k[3]:.6g}"
    assert steps["× scale 0.5"] == f"{0.5 * (q[1] @ k[3]):.6g}"  # finite: not yet masked
    assert steps["+M_ij = −∞ (masked)"] == "−∞"
    assert steps["exp(·)"] == "0"
    visible = dict(arithmetic.steps(engine.cell_arithmetic(q, k, v, 3, 1, 0.5, mask), True))
    assert "+M_ij = 0 (visible)" in visible
    unmasked = [name for name, _ in arithmetic.steps(masked, masked=False)]
    assert not any(name.startswith("+M_ij") for name in unmasked)


def test_the_causal_pages_clicked_masked_cell_shows_score_scale_mask_softmax():
    at = open_app("causal_mask", causal_weights_masked_cell=(2, 5))
    assert not at.exception
    (table,) = [t.value for t in at.table if "step" in t.value.columns]
    names = list(table["step"])
    assert names[:3] == ["q_i · k_j", names[1], "+M_ij = −∞ (masked)"]
    assert names[1].startswith("× scale ")
    dot, scaled = (float(v) for v in table["value"][:2])
    assert np.isfinite(scaled)
    assert scaled == pytest.approx(dot * float(names[1].split()[-1]), rel=1e-3)
    assert table["value"].iloc[2] == "−∞"
    assert table["value"].iloc[-1] == "0"


def test_the_effective_tokens_column_on_attention_says_what_it_averages():
    at = open_app("attention")
    header = charts(at)["att_saturation_mean"]["data"][0]["header"]["values"]
    assert "effective tokens: mean of 2^Hᵢ" in [html.unescape(h) for h in header]


def test_one_sentence_summary_claims_no_other_sentences():
    at = open_app("summarize", {"text": "Only one sentence is here."}, timeout=180)
    assert not at.exception
    words = " ".join(text for _, text in said(at))
    assert "from the other sentences" not in words
    assert "favours the first sentence" not in words
    assert not re.search(r"\b1 steps\b", words)
    assert "no other sentence to attend to" in words
    assert "summarize_attention" not in charts(at)


def test_summarize_gives_lexranks_damping_in_the_papers_notation():
    at = open_app("summarize", timeout=180)
    words = " ".join(c.value for c in at.caption)
    assert "d = 0.15" in words
    assert "damping 0.85" not in words


def test_the_head_finder_answers_for_the_text_on_screen():
    at = open_app("pretrained", {"text": TROPHY}, timeout=180)
    assert not at.exception
    words = " ".join(plain(m.value) for m in at.markdown)
    found = re.search(
        r"Which head links “it” to “trophy” most\? Layer (\d+), head (\d+), "
        r"with weight (\d\.\d\d)",
        words,
    )
    assert found, words
    layer, head, weight = found.groups()
    grid = chart_z(at, "pretrained_finder")
    assert (int(layer), int(head)) == np.unravel_index(grid.argmax(), grid.shape)
    assert float(weight) == pytest.approx(grid.max(), abs=0.005)
    assert "restaurant" not in " ".join(text for _, text in said(at))


def test_the_rollout_caption_gives_the_renormalisation_the_code_applies():
    at = open_app("pretrained", timeout=180)
    assert any("½(W̄ + I)" in c.value for c in at.caption)


def test_linear_attention_is_not_said_to_score_every_pair():
    at = open_app("efficient", RANDOM)
    titles = {key: title_of(figure) for key, figure in charts(at).items()}
    assert titles["efficient_linear"].endswith("every pair weighted, none scored: O(n)")
    assert titles["efficient_full"].endswith("100% of the n² pairs scored")
    table = at.dataframe[0].value.set_index("pattern")
    assert table.loc["linear (elu + 1)", "pairs scored"] == 0.0
    assert table.loc["linear (elu + 1)", "pairs weighted"] == 100.0  # drawn as a percentage


def test_the_encoder_layer_says_when_an_outlier_would_set_its_colours():
    at = open_app("encoder_layer")
    figure = charts(at)["enc_ffn_update"]
    limit, largest = stated_clip(title_of(figure))
    z = chart_z(at, "enc_ffn_update")
    assert figure["data"][0]["zmax"] == pytest.approx(limit, rel=1e-2)
    assert largest == pytest.approx(np.abs(z).max(), rel=1e-2)


def test_colour_limits_clip_only_outliers():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((40, 128)).astype(np.float32)
    limit, largest = heatmap.colour_limit(z)
    assert limit == largest  # no outlier: the whole range
    z[0, 0] = 40.0
    limit, largest = heatmap.colour_limit(z)
    assert largest == 40.0
    assert limit == pytest.approx(np.percentile(np.abs(z), 99))
    assert heatmap.colour_limit(z, clip=False) == (40.0, 40.0)
    plain_title = heatmap.figure(z, range(40), range(128), "Z").layout.title.text
    assert plain_title == "Z"
    clipped = heatmap.figure(z, range(40), range(128), "Z", clip=True)
    assert stated_clip(clipped.layout.title.text) == pytest.approx((limit, 40.0), rel=1e-2)
    assert clipped.data[0].zmax == pytest.approx(limit)


def test_vision_says_its_weights_scale_is_not_zero_to_one():
    at = open_app("vision")
    figure = charts(at)["vision_weights"]
    top = figure["data"][0]["zmax"]
    assert top < 1.0
    note = title_of(figure).replace(style.NO_BREAK, " ")  # a number kept with its word
    assert f"colour scale 0 to {top:.3g}, the largest weight, not 0 to 1" in note
    overlay = title_of(charts(at)["vision_overlay"])
    assert "yellow at the row's largest weight" in overlay


def test_equations_cite_the_papers_sections_and_say_how_they_count():
    assert "§3.2, eq. 15" in equations.ROTARY
    assert "§3.4" not in equations.ROTARY
    assert r"i = 0, \dots," in equations.ROTARY
    assert r"\text{head}_0" in equations.MULTI_HEAD
    assert "Vaswani" not in equations.GREEDY_DECODING  # the paper decodes by beam search


def test_the_decoder_says_the_paper_used_beam_search():
    at = open_app("decoder")
    words = " ".join(c.value for c in at.caption)
    assert "beam search" in words
    assert "beam size 4, length penalty α = 0.6" in words
    assert "§6.1" in words


def test_positional_encoding_points_at_add_positions_only_when_the_sidebar_shows_it():
    trained = " ".join(c.value for c in open_app("positional_encoding").caption)
    assert "under “Add positions”" not in trained  # hidden while the weights are MiniLM's
    at = open_app("positional_encoding", RANDOM)
    assert "under “Add positions”" in " ".join(c.value for c in at.caption)
    assert at.sidebar.selectbox(key="pe").label == "Add positions"


def test_multi_head_states_the_indexing_beside_its_equation():
    at = open_app("multi_head")
    assert any(
        wording.INDEXING in c.value and "their head₁ is head 0 here" in c.value for c in at.caption
    )
    at = open_app("positional_encoding")
    assert any("its θ₁ is θ₀ here" in c.value for c in at.caption)


def test_multi_heads_worked_cell_names_the_head_it_works_out():
    """Issue 55: the panel under twelve heads said "Cell (2, 5)" and never which head."""
    at = open_app("multi_head", mh_heads_cell=(2, 5), mh_heads_head=7)
    assert not at.exception
    (heading,) = [m.value for m in at.markdown if m.value.startswith("**Cell (2, 5)")]
    assert heading.startswith("**Cell (2, 5) of head 7: query")
    (table,) = [t.value for t in at.table if "step" in t.value.columns]
    weight = float(table["value"].iloc[-1])
    assert weight == pytest.approx(chart_z(at, "mh_heads", trace=7)[2, 5], rel=1e-4)
    assert "Click a cell of any head's weights" in " ".join(
        c.value for c in open_app("multi_head").caption
    )


def test_every_tour_step_has_words_from_its_own_figure_or_none():
    for step in tour.STEPS:
        assert "restaurant" not in step.text
        assert "0.43" not in step.text
        assert "layer 3" not in step.text
