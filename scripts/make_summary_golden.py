"""Write tests/data/summary_golden.npz: sentence-transformers' embeddings for a few sentences.

Run once, by hand, when the sentences change; the tests only read the file. The reference
is sentence-transformers' ``SentenceTransformer`` on PyTorch (CPU), loaded with the network
off from the same installed all-MiniLM-L6-v2 folder the engine reads: its modules.json
chains the BERT encoder, mean pooling (1_Pooling/config.json) and L2 normalisation, and
its sentence_bert_config.json cuts sentences at 256 tokens. The last sentence here is
longer than that, so the golden file checks the cut too.

Needs torch and sentence-transformers, which are development tools, not project
dependencies; keep them out of the shared environment:

    python -m venv --system-site-packages /work/venv-dev
    /work/venv-dev/bin/pip install torch==2.13.0 sentence-transformers
    PYTHONPATH=. /work/venv-dev/bin/python scripts/make_summary_golden.py
"""

import os

os.environ["HF_HUB_OFFLINE"] = "1"

from pathlib import Path

import numpy as np
import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

from engine.resources import minilm_dir

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "summary_golden.npz"

SENTENCES = (
    "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian food.",
    "Attention lets every token look at every other token!",
    "Is the naïve café in Zürich open on Sundays?",
    "Short.",
    # About 330 word pieces: longer than the 256 tokens sentence-transformers reads.
    " ".join(["The committee discussed the budget, the schedule and the venue"] * 30) + ".",
)


def main():
    folder = minilm_dir()
    if folder is None:
        raise SystemExit("all-MiniLM-L6-v2 is not installed")
    torch.set_num_threads(1)
    model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    embeddings = model.encode(list(SENTENCES), batch_size=1, convert_to_numpy=True)
    n_tokens = [len(model.tokenizer(s)["input_ids"]) for s in SENTENCES]
    print(f"max_seq_length {model.max_seq_length}; tokens per sentence {n_tokens}")
    if max(n_tokens) <= model.max_seq_length:
        raise SystemExit("the last sentence must be longer than max_seq_length")
    arrays = {
        "sentences": np.array(SENTENCES),
        "embeddings": embeddings.astype(np.float32),
        "max_seq_length": np.array(model.max_seq_length),
        "versions": np.array(
            f"torch {torch.__version__}, sentence-transformers {sentence_transformers.__version__}"
        ),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e3:.1f} kB)")


if __name__ == "__main__":
    main()
