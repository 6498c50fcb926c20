"""Write tests/data/minilm_golden.npz: the reference BertModel's outputs for a few texts.

Run once, by hand, when the texts change; the tests only read the file. The reference is
Hugging Face transformers' ``BertModel`` on PyTorch (CPU, eager attention), loaded from the
same installed all-MiniLM-L6-v2 folder the engine reads, with the network off. The token
ids come from transformers' pure-Python ``BertTokenizerLegacy`` (built from vocab.txt),
an implementation independent of the Rust ``tokenizers`` one the engine uses.

Needs torch and transformers, which are development tools, not project dependencies:

    pip install torch==2.13.0 transformers
    python scripts/make_bert_golden.py
"""

import os

os.environ["HF_HUB_OFFLINE"] = "1"

from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import BertModel
from transformers.models.bert import BertTokenizerLegacy

from engine.resources import minilm_dir

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "minilm_golden.npz"

RESTAURANT = (
    "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
    "food. In the end, they just gave me two slices of bread. Their ambiance was just as "
    "good as the food and service."
)
LONG = (
    "Self-attention lets every token in a sentence look at every other token and decide "
    "how much of each to take in. A query from one token is compared with the keys of all "
    "tokens; the scores are scaled, passed through a softmax, and used to mix the values. "
    "Each head learns its own queries, keys and values, so one head may follow syntax while "
    "another tracks which noun a pronoun refers to. When the model reads that the trophy "
    "did not fit in the suitcase because it was too big, some head should send the word it "
    "towards the trophy. Whatever these weights explain, they are easy to compute, and "
    "anyone can check them."
)
TEXTS = {
    "accents": "The naïve café owner in Zürich couldn't pronounce antidisestablishmentarianism.",
    "restaurant": RESTAURANT,
    "long": LONG,
}
MIN_LONG_TOKENS = 128
#: Every query row is stored for the short texts, every third for the long one: its full
#: float32 maps alone would be 5 MB, and float16 rounds weights near 1 by up to 2.4e-4,
#: more than the 1e-4 the parity test allows. The full last hidden state is stored for all.
ROW_STRIDE = {"accents": 1, "restaurant": 1, "long": 3}


def main():
    folder = minilm_dir()
    if folder is None:
        raise SystemExit("all-MiniLM-L6-v2 is not installed")
    tokenizer = BertTokenizerLegacy.from_pretrained(folder, local_files_only=True)
    model = BertModel.from_pretrained(folder, local_files_only=True, attn_implementation="eager")
    model.eval()
    arrays = {}
    for name, text in TEXTS.items():
        ids = tokenizer(text)["input_ids"]
        with torch.inference_mode():
            out = model(torch.tensor([ids]), output_attentions=True)
        attentions = torch.stack(out.attentions)[:, 0]  # -> [n_layers, n_heads, n, n]
        rows = np.arange(0, len(ids), ROW_STRIDE[name])
        arrays[f"{name}/text"] = np.array(text)
        arrays[f"{name}/ids"] = np.array(ids, dtype=np.int64)
        arrays[f"{name}/query_rows"] = rows
        arrays[f"{name}/attentions"] = attentions.numpy().astype(np.float32)[:, :, rows]
        arrays[f"{name}/last_hidden_state"] = out.last_hidden_state[0].numpy().astype(np.float32)
        print(f"{name}: {len(ids)} tokens")
    if len(arrays["long/ids"]) < MIN_LONG_TOKENS:
        raise SystemExit(f"the long text needs at least {MIN_LONG_TOKENS} tokens")
    arrays["versions"] = np.array(
        f"torch {torch.__version__}, transformers {transformers.__version__}"
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
