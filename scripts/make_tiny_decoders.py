"""Write tests/data/tiny_models/{llama,llama_fp32,mistral,qwen2}: today's decoders, tiny.

The Llama family (Touvron et al. 2023) as transformers stores it: RMSNorm, SwiGLU, rotary
positions, grouped-query attention, weights in bf16. Four tiny random checkpoints, made
with transformers' own classes so that key names and config fields are the real ones:

- ``llama``: ``LlamaForCausalLM`` in bf16, 4 query heads sharing 2 key/value heads, an
  untied ``lm_head``, a tokenizer that adds ``<s>``;
- ``llama_fp32``: the same family in float32, one key/value head for all 4 query heads
  (multi-query), ``rope_scaling`` linear with factor 2, ``lm_head`` tied to the embeddings;
- ``mistral``: ``MistralForCausalLM`` in bf16, a ``sliding_window`` of 16 tokens, shorter
  than the long text, and ``rope_theta`` 1e6;
- ``qwen2``: ``Qwen2ForCausalLM`` in bf16, biases on Q, K and V, tied embeddings, no
  ``<s>`` (Qwen adds no special token), config in transformers 5's ``rope_parameters``.

Llama's and Mistral's config.json are written back in the older layout the released
models ship (``rope_theta`` and ``rope_scaling`` at the top level, as SmolLM2, TinyLlama
and Mistral-7B have them); transformers reads both, and the references are computed from
the folder as written.

Beside each folder, ``<name>.npz`` holds what transformers computes from it, in float32
on the weights upcast from bf16 (exactly: bf16 → float32 is exact): the token ids, every
layer's attention (eager), every hidden state, the logits, and 10 greedy tokens after the
short text. The engine's parity tests read both; they never import PyTorch.

Run once, by hand, with the network off, in the development environment:

    python3 -m venv /tmp/torchenv
    /tmp/torchenv/bin/pip install torch==2.13.0 transformers safetensors tokenizers
    HF_HUB_OFFLINE=1 /tmp/torchenv/bin/python scripts/make_tiny_decoders.py
"""

import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"

import shutil
from pathlib import Path

import numpy as np
import tokenizers
import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "assets" / "bpe-corpus.txt"
OUT = ROOT / "tests" / "data" / "tiny_models"

SEED = 43
WEIGHT_STD = 0.25  # as make_tiny_checkpoints.py: attention far from uniform
BIAS_STD = 0.1
GAIN_STD = 0.1
VOCAB_SIZE = 320  # the 256 bytes, 3 specials and 61 merges: small tables, small files
SIZES = {
    "hidden_size": 32,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "max_position_embeddings": 128,
}
TEXTS = {
    "short": "The cat sat on the mat.",
    "long": "The restaurant refused to serve me a ham sandwich: it only cooks vegetarian food.",
}
N_GREEDY = 10
FOLDER_FILES = {
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
}


def byte_bpe(bos):
    """A byte-level BPE tokenizer; with ``bos`` it adds ``<s>`` before every text."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train([str(CORPUS)], trainer)
    if bos:
        tokenizer.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)]
        )
    else:
        tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


def scale_up(model):
    """Redraw every parameter from a seeded generator, larger than transformers' init."""
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for module in model.modules():
            for name, parameter in module.named_parameters(recurse=False):
                noise = torch.randn(parameter.shape, generator=generator)
                if type(module).__name__.endswith("RMSNorm"):
                    parameter.copy_(1 + GAIN_STD * noise)
                elif isinstance(module, torch.nn.Embedding):
                    parameter.copy_(WEIGHT_STD * noise)
                elif isinstance(module, torch.nn.Linear) and name == "weight":
                    fan_in = parameter.shape[1]
                    parameter.copy_(WEIGHT_STD * (SIZES["hidden_size"] / fan_in) ** 0.5 * noise)
                else:
                    parameter.copy_(BIAS_STD * noise)


def families():
    """Each checkpoint: config, class, dtype saved, tokenizer, config.json in the old layout."""
    with_bos, without_bos = byte_bpe(bos=True), byte_bpe(bos=False)
    ids = {"bos_token_id": 1, "eos_token_id": 2, "vocab_size": VOCAB_SIZE}
    return {
        "llama": (
            LlamaConfig(**SIZES, **ids, rms_norm_eps=1e-5, tie_word_embeddings=False),
            LlamaForCausalLM,
            torch.bfloat16,
            with_bos,
            True,
        ),
        "llama_fp32": (
            LlamaConfig(
                **{**SIZES, "num_key_value_heads": 1},
                **ids,
                rms_norm_eps=1e-6,
                tie_word_embeddings=True,
                rope_scaling={"rope_type": "linear", "factor": 2.0},
            ),
            LlamaForCausalLM,
            torch.float32,
            with_bos,
            True,
        ),
        "mistral": (
            MistralConfig(
                **SIZES, **ids, sliding_window=16, rope_theta=1e6, tie_word_embeddings=False
            ),
            MistralForCausalLM,
            torch.bfloat16,
            with_bos,
            True,
        ),
        "qwen2": (
            Qwen2Config(**SIZES, **ids, rms_norm_eps=1e-6, tie_word_embeddings=True),
            Qwen2ForCausalLM,
            torch.bfloat16,
            without_bos,
            False,
        ),
    }


def legacy_rope(folder):
    """config.json with ``rope_theta`` and ``rope_scaling`` on top, as released models have."""
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    rope = dict(config.pop("rope_parameters"))
    config["rope_theta"] = rope.pop("rope_theta")
    config["rope_scaling"] = None if rope.get("rope_type") == "default" else rope
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def write_checkpoint(folder, config, model_class, dtype, tokenizer, legacy):
    torch.manual_seed(SEED)
    model = model_class(config).float().eval()
    scale_up(model)
    shutil.rmtree(folder, ignore_errors=True)
    model.to(dtype).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    if legacy:
        legacy_rope(folder)
    unexpected = {f.name for f in folder.iterdir()} - FOLDER_FILES
    if unexpected:
        raise SystemExit(f"{folder.name}: transformers wrote {sorted(unexpected)} too")


def reference(folder, model_class):
    """What transformers computes from folder in float32, for each text, keyed name/field."""
    rust = Tokenizer.from_file(str(folder / "tokenizer.json"))
    model, info = model_class.from_pretrained(
        folder,
        local_files_only=True,
        attn_implementation="eager",
        dtype=torch.float32,
        output_loading_info=True,
    )
    if info["missing_keys"] or info["mismatched_keys"] or info["unexpected_keys"]:
        raise SystemExit(f"{folder.name}: reload lost weights: {info}")
    model.eval()
    arrays = {}
    for name, text in TEXTS.items():
        ids = rust.encode(text).ids
        with torch.inference_mode():
            out = model(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
        arrays[f"{name}/text"] = np.array(text)
        arrays[f"{name}/ids"] = np.array(ids, dtype=np.int64)
        arrays[f"{name}/tokens"] = np.array(rust.encode(text).tokens)
        arrays[f"{name}/attentions"] = torch.stack(out.attentions)[:, 0].numpy()
        arrays[f"{name}/hidden_states"] = torch.stack(out.hidden_states)[:, 0].numpy()
        arrays[f"{name}/logits"] = out.logits[0].numpy()
    greedy = list(arrays["short/ids"])
    for _ in range(N_GREEDY):  # the whole pass again each step, as the engine's generate
        with torch.inference_mode():
            logits = model(torch.tensor([greedy])).logits[0, -1]
        greedy.append(int(torch.argmax(logits)))
    arrays["short/greedy"] = np.array(greedy[len(arrays["short/ids"]) :], dtype=np.int64)
    arrays["config_json"] = np.array((folder / "config.json").read_text(encoding="utf-8"))
    if len(arrays["long/ids"]) <= 16:
        raise SystemExit(f"{folder.name}: the long text is no longer than the sliding window")
    return arrays


def main():
    torch.use_deterministic_algorithms(True)
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    versions = (
        f"torch {torch.__version__}, transformers {transformers.__version__}, "
        f"tokenizers {tokenizers.__version__}"
    )
    for name, (config, model_class, dtype, tokenizer, legacy) in families().items():
        folder = OUT / name
        write_checkpoint(folder, config, model_class, dtype, tokenizer, legacy)
        arrays = reference(folder, model_class)
        arrays["versions"] = np.array(versions)
        np.savez_compressed(OUT / f"{name}.npz", **arrays)
        files = sorted(folder.iterdir())
        size = sum(f.stat().st_size for f in files)
        lengths = ", ".join(f"{k[:-4]} {len(v)}" for k, v in arrays.items() if k.endswith("/ids"))
        print(
            f"{name:11} {size / 1e3:5.0f} kB folder ({', '.join(f.name for f in files)}); "
            f"{(OUT / f'{name}.npz').stat().st_size / 1e3:4.0f} kB reference; tokens: {lengths}; "
            f"greedy {arrays['short/greedy'].tolist()}"
        )


if __name__ == "__main__":
    main()
