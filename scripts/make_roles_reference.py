"""Write tests/data/tiny_models/roles.npz: transformers' attentions on repeated random tokens.

For the head-role scores (:mod:`engine.roles`): on five tiny checkpoints (an encoder with
``[CLS] … [SEP]``, GPT-2 with no special token, Llama with ``<s>``, Qwen2 and Gemma 3),
the sequence ``prefix · t_1 … t_R · t_1 … t_R · suffix`` of seed 0, R = 20, as
:func:`engine.roles.repeated_sequence` draws it (its ids are an input here, not a result),
run by transformers in float32, eager attention: every layer's weights. The tests compute
each score's formula, in loop form, over these weights and compare the engine's scores
with them; they never import PyTorch.

Run once, by hand, with the network off, in the development environment:

    HF_HUB_OFFLINE=1 /tmp/torchenv/bin/python scripts/make_roles_reference.py
"""

import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"

from pathlib import Path

import numpy as np
import tokenizers
import torch
import transformers
from transformers import AutoModel

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine import checkpoint, roles  # noqa: E402  (the ids only: numpy and tokenizers)

TINY = ROOT / "tests" / "data" / "tiny_models"
FOLDERS = ("bert", "gpt2", "llama", "qwen2", "gemma3_fp32")
SEED, REPEAT = 0, 20


def main():
    torch.use_deterministic_algorithms(True)
    transformers.utils.logging.set_verbosity_error()
    arrays = {
        "versions": np.array(
            f"torch {torch.__version__}, transformers {transformers.__version__}, "
            f"tokenizers {tokenizers.__version__}"
        )
    }
    for name in FOLDERS:
        model = checkpoint.load(TINY / name)
        repeat = roles.fitting_repeat(model, REPEAT)
        ids, start = roles.repeated_sequence(model, repeat, SEED)
        reference = AutoModel.from_pretrained(
            TINY / name, local_files_only=True, attn_implementation="eager", dtype=torch.float32
        )
        reference.eval()
        with torch.inference_mode():
            out = reference(torch.tensor([ids.tolist()]), output_attentions=True)
        arrays[f"{name}/ids"] = ids.astype(np.int64)
        arrays[f"{name}/start"] = np.array(start)
        arrays[f"{name}/repeat"] = np.array(repeat)
        arrays[f"{name}/attentions"] = torch.stack(out.attentions)[:, 0].numpy()
        print(name, len(ids), start, repeat)
    np.savez_compressed(TINY / "roles.npz", **arrays)


if __name__ == "__main__":
    main()
