"""The engine's threads in a server: ``--threads`` and serve_class.sh's count reach every pass.

``attention-explorer --threads N`` and ``scripts/serve_class.sh`` (CPUs / replicas) set
``ATTENTION_EXPLORER_THREADS``; each engine call of the app that computes a layer in parts
must pass it on as ``parallel`` (the engine reads no environment). That serve_class.sh sets
it in each replica is ``tests/install/test_serve_class.py``'s.
"""

from __future__ import annotations

import pytest
from tiny_models import TINY

import engine.attention
import engine.layers
from app import cli
from app.data import cache, documents, layers, models, threads, trained
from app.state import controls

needs_minilm = pytest.mark.skipif(controls.MINILM is None, reason="MiniLM is not installed")


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, True), ("1", 1), (" 3 ", 3), ("0", True), ("-2", True), ("two", True), ("", True)],
)
def test_the_count_set_or_every_cpu(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv(threads.THREADS_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(threads.THREADS_VARIABLE, value)
    assert repr(threads.parallel()) == repr(expected)  # True == 1: compare reprs


def test_the_command_passes_threads_in_the_environment(monkeypatch):
    assert cli.THREADS_VARIABLE == threads.THREADS_VARIABLE
    line, env = cli.command(threads=2)
    assert env[cli.THREADS_VARIABLE] == "2"
    assert "2" not in line[5:]  # the environment carries it, not streamlit's options
    monkeypatch.setenv(cli.THREADS_VARIABLE, "5")
    assert cli.THREADS_VARIABLE not in cli.command()[1]  # none asked for: none passed on


@pytest.mark.parametrize("bad", ["0", "-1"])
def test_the_command_refuses_fewer_than_one_thread(bad, capsys):
    with pytest.raises(SystemExit):
        cli.main(["--threads", bad])
    assert "--threads" in capsys.readouterr().err


@needs_minilm
def test_every_engine_call_of_the_app_passes_the_count_on(monkeypatch):
    """Every call that computes a layer's sums in parts (:func:`engine.parts.in_parts`, from
    :data:`engine.parts.PARALLEL_MIN_TOKENS` tokens on) hears ``parallel=1`` when the server
    was started with one thread. (The date translator reads at most 32 words: one part.)"""
    seen = []

    def recording(real):
        def in_parts(work, parts, parallel=True):
            if parts > 1:  # one part is the caller's alone, whatever ``parallel`` says
                seen.append(parallel)
            return real(work, parts, parallel)

        return in_parts

    for module in (engine.attention, engine.layers):
        monkeypatch.setattr(module, "in_parts", recording(module.in_parts))
    monkeypatch.setenv(threads.THREADS_VARIABLE, "1")
    cache.clear()
    text = "Threads change the time of a pass, " * 13 + "never a number it gives."  # 112 tokens
    for_gpt2 = "Threads change the time of a pass, " * 6 + "never a number it gives."  # its 120
    other_gpt2 = for_gpt2.replace("gives", "gave")
    sentences = f"{text} {text.upper()}"  # two sentences: a pass each
    calls = {
        "minilm run": lambda: trained.run("minilm", text),
        "layer run": lambda: trained.layer_run("minilm", text, 2, scale=0.5),
        "layer stages": lambda: trained.layer_stages("minilm", text, 1),
        "permutation": lambda: trained.permutation_errors("minilm", text, 7),
        "folder run": lambda: models.run(str(TINY / "gpt2"), for_gpt2),
        # a text not run yet: generation continues the page's pass, here its own
        "generation": lambda: models.generation(str(TINY / "gpt2"), other_gpt2, 2, 0.0, None),
        "summary": lambda: documents.rank(sentences, None),
        "toy encoder": lambda: layers.encoder(controls.Settings(text=text, d_model=8), False),
    }
    for name, call in calls.items():
        seen.clear()
        result = call()
        assert result is not None, name
        assert not isinstance(result, Exception), (name, result)
        assert seen, f"{name}: no layer computed in parts"
        assert {repr(parallel) for parallel in seen} == {"1"}, name  # True == 1: compare reprs
    cache.clear()
