"""Print a digest of every array the engine returns for MiniLM, a tiny GPT-2, the toy model
and the translator.

Run by ``tests/engine/test_process.py`` in fresh processes set up differently (BLAS
threads, CPUs, the engine's threads, calling threads); the digests must all be the same.
``--threads N`` runs the whole workload in N threads at once, which must agree with each
other too; ``--parallel N`` passes ``parallel=N`` to the passes (N engine threads each),
``--serial`` ``parallel=False``.
"""

import argparse
import hashlib
import sys
import threading
from pathlib import Path

GPT2 = Path(__file__).parents[1] / "data" / "tiny_models" / "gpt2"
LONG_TEXT = " ".join(["Self-attention lets every token look at every other token."] * 25)


def digest(value, hasher):
    """Feed every array, number and string of a (nested) result to ``hasher``, in order."""
    import numpy as np

    if isinstance(value, np.ndarray):
        hasher.update(str((value.dtype, value.shape)).encode())
        hasher.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, tuple | list):
        for item in value:
            digest(item, hasher)
    elif isinstance(value, dict):
        for key in sorted(value):
            digest(value[key], hasher)
    elif hasattr(value, "_asdict"):
        digest(tuple(value), hasher)
    else:
        hasher.update(repr(value).encode())
    return hasher


def workload(parallel=True):
    """Everything the digests cover, computed once: one result per name."""
    from app.state.controls import DEFAULT_TEXT
    from engine import analysis, bert, checkpoint, one_layer, seq2seq
    from engine.layers import encoder_layer, toy_encoder_weights
    from engine.toy import run_toy

    model = checkpoint.load_minilm()
    gpt2 = checkpoint.load(GPT2)  # 4 heads, 128 positions
    short = bert.run(model, DEFAULT_TEXT, parallel=parallel)
    long = bert.run(model, LONG_TEXT, parallel=parallel)
    longest = bert.run_ids(
        model, [101, *([2023, 2003, 1037, 6251, 1012] * 102), 102], parallel=parallel
    )
    tokens = [f"t{i % 40}" for i in range(300)]
    toy = run_toy(tokens, 64, 4, seed=3, pe="rotary", causal=True)
    return {
        "gpt2 default passage": bert.run(gpt2, DEFAULT_TEXT, parallel=parallel),
        "gpt2 128 tokens": bert.run_ids(gpt2, [i % 600 for i in range(128)], parallel=parallel),
        "minilm 45 tokens": short,
        "minilm long": long,
        "minilm 512 tokens": longest,
        "layer run": one_layer.layer_run(model, long, 3, scale=2.0, causal=True),
        "layer stages": one_layer.layer_stages(model, long, 2),
        "rollout": analysis.attention_rollout(long.attentions, cumulative=True),
        "toy": toy,
        "toy small": run_toy(["the", "cat", "sat"], 8, 2, seed=0, scale=0.5),
        "toy encoder": encoder_layer(
            toy.x, **toy_encoder_weights(64, 256, 3), n_heads=4, parallel=parallel
        ),
        "translator": seq2seq.translate(seq2seq.load_translator(), "the third of march 2021"),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--parallel", type=int)
    parser.add_argument("--serial", action="store_true")
    args = parser.parse_args()
    parallel = False if args.serial else args.parallel or True
    results = [None] * args.threads

    def work(index):
        found = workload(parallel)
        results[index] = {
            name: digest(value, hashlib.sha256()).hexdigest() for name, value in found.items()
        }

    threads = [threading.Thread(target=work, args=(i,)) for i in range(args.threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if any(found != results[0] for found in results):
        sys.exit(f"threads of one process disagree: {results}")
    for name, hexdigest in results[0].items():
        print(f"{name}: {hexdigest}")


if __name__ == "__main__":
    main()
