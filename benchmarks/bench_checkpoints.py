"""The checkpoints the engine reads from a folder: parity with transformers, and forward time.

For each tiny checkpoint of ``tests/data/tiny_models`` (one per family), the largest
difference from what transformers computed (every layer's attention, every hidden state,
GPT-2's logits, over the reference texts), then the median time of a forward pass
(``engine.bert.run_ids``) on its longest reference text and on a full context of 128
tokens, beside MiniLM's on the app's default passage (45 tokens). The models take turns
in blocks, so that a drift in the machine's load hits them alike::

    python3 benchmarks/bench_checkpoints.py [--runs 200]

Figures and how they were taken: docs/benchmarks.md.
"""

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

from engine import bert, checkpoint, generate

TINY = Path(__file__).resolve().parent.parent / "tests" / "data" / "tiny_models"
FAMILIES = ("bert", "bert_variant", "roberta", "distilbert", "electra", "gpt2")
DEFAULT_TEXT = (
    "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
    "food. In the end, they just gave me two slices of bread. Their ambiance was just as "
    "good as the food and service."
)
BLOCK = 10


def parity(model, reference):
    """The largest differences from transformers: attention, hidden states, logits."""
    worst = {"attention": 0.0, "hidden": 0.0, "logits": 0.0}
    for case in sorted({key.split("/")[0] for key in reference if key.endswith("/ids")}):
        ids, types = reference[f"{case}/ids"], reference[f"{case}/token_type_ids"]
        result = bert.run_ids(model, ids, types=types)
        ours = np.concatenate([result.hidden_states[:-1], result.last_hidden_state[None]])
        found = {
            "attention": np.abs(result.attentions - reference[f"{case}/attentions"]).max(),
            "hidden": np.abs(ours - reference[f"{case}/hidden_states"]).max(),
        }
        if model.config.lm_head:
            logits = generate.logits(model, result)
            found["logits"] = np.abs(logits - reference[f"{case}/logits"]).max()
        worst = {key: max(worst[key], float(found.get(key, 0.0))) for key in worst}
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="timed runs per case")
    args = parser.parse_args()
    cases, models = {}, {}
    print(f"{'checkpoint':<13} {'attention':>10} {'hidden':>10} {'logits':>10}")
    for name in FAMILIES:
        model = checkpoint.load(TINY / name)
        with np.load(TINY / f"{name}.npz") as data:
            reference = {key: data[key] for key in data.files}
        worst = parity(model, reference)
        logits = f"{worst['logits']:>10.1e}" if model.config.lm_head else f"{'-':>10}"
        print(f"{name:<13} {worst['attention']:>10.1e} {worst['hidden']:>10.1e} {logits}")
        longest = max(
            (reference[key] for key in reference if key.endswith("/ids")), key=len
        ).tolist()
        full = [(7 * i + 5) % model.config.n_vocab for i in range(model.config.max_tokens)]
        models[name] = model
        cases[f"{name}, {len(longest)} tokens"] = (name, longest)
        cases[f"{name}, {len(full)} tokens"] = (name, full)
    minilm = checkpoint.load_minilm()
    models["minilm"] = minilm
    cases["MiniLM, 45 tokens"] = ("minilm", minilm.tokenizer.encode(DEFAULT_TEXT).ids)
    print("\nload average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    timings = {case: [] for case in cases}
    for block in range(max(args.runs // BLOCK, 1)):
        order = list(cases) if block % 2 == 0 else list(reversed(cases))
        for case in order:
            name, ids = cases[case]
            bert.run_ids(models[name], ids)  # untimed: caches warm
            for _ in range(BLOCK):
                start = time.perf_counter()
                bert.run_ids(models[name], ids)
                timings[case].append(time.perf_counter() - start)
    print(f"{'forward pass':<26} {'median ms':>10}")
    for case, found in timings.items():
        print(f"{case:<26} {statistics.median(found) * 1e3:>10.3f}")
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
