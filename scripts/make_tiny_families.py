"""Write tests/data/tiny_models/{llama3,qwen3,gemma3,gemma3_fp32,gemma2,phi3}: 2026's families.

The families people download now (issue #53), each changing attention in its own way, as
tiny random checkpoints made with transformers' own classes so that key names and config
fields are the real ones:

- ``llama3``: ``LlamaForCausalLM`` in bf16 as Llama 3.2 ships it: ``rope_scaling`` of type
  ``llama3`` (factor 32, low_freq_factor 1, high_freq_factor 4,
  original_max_position_embeddings 256 so that the tiny heads' four frequencies fall in
  all three bands: kept, smoothed, divided), ``rope_theta`` 5e5, an explicit ``head_dim``,
  tied embeddings, the older top-level layout;
- ``qwen3``: ``Qwen3ForCausalLM`` in bf16: RMSNorm of q and k over ``head_dim`` 16 before
  the rotation, with hidden 32 and 4 heads (head_dim ≠ hidden ÷ heads), GQA 4/2, tied,
  transformers 5's ``rope_parameters``, no special token added;
- ``gemma3``: ``Gemma3ForCausalLM`` in bf16: ``layer_types`` sliding then full, a
  ``sliding_window`` of 16 (shorter than the long text), per-layer-type
  ``rope_parameters`` (1e4 local, 1e6 global), q/k norms, √d embeddings, (1 + w) norms,
  four norms a layer, ``query_pre_attn_scalar`` 24 (not head_dim 16), GeGLU;
- ``gemma3_fp32``: the same family in float32 with Gemma 2's soft-capping of the logits
  (6) set, linear scaling (factor 2) on the global layers, 3 layers
  (sliding, full, sliding), config.json in the older layout the released Gemma 3 models
  ship (``rope_theta``, ``rope_local_base_freq``, ``rope_scaling``,
  ``sliding_window_pattern`` instead of ``layer_types``). Not the scores' soft-capping:
  transformers 5 reads Gemma 3's ``attn_logit_softcapping`` but never applies it (Gemma 3
  replaced it with the norms of q and k), so the engine refuses a Gemma 3 that sets it;
- ``gemma2``: ``Gemma2ForCausalLM`` in bf16, Gemma 3's layers without the q/k norms but
  with the scores' soft-capping (5, low enough to bite on these weights) and the logits'
  (8), every other layer local (no ``layer_types``: Gemma 2's files give none), one rotary
  base, ``rope_theta`` on top;
- ``phi3``: ``Phi3ForCausalLM`` in bf16: fused ``qkv_proj`` and ``gate_up_proj``, a
  ``sliding_window`` of 16 (Phi-3-mini-4k has one), untied ``lm_head``, older layout.

Beside each folder, ``<name>.npz`` holds what transformers computes from it in float32
eager on the weights upcast from bf16 (exact), in the layout of
``scripts/make_tiny_decoders.py``, whose helpers this script uses.

Run once, by hand, with the network off, in the development environment:

    HF_HUB_OFFLINE=1 /tmp/torchenv/bin/python scripts/make_tiny_families.py
"""

import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"

import numpy as np
import tokenizers
import torch
import transformers
from make_tiny_decoders import OUT, SIZES, VOCAB_SIZE, byte_bpe, reference, write_checkpoint
from transformers import (
    Gemma2Config,
    Gemma2ForCausalLM,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    LlamaConfig,
    LlamaForCausalLM,
    Phi3Config,
    Phi3ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

LLAMA3_SCALING = {
    "rope_type": "llama3",
    "factor": 32.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 256,
}


def families():
    """Each checkpoint: config, class, dtype saved, tokenizer, how config.json is rewritten."""
    with_bos, without_bos = byte_bpe(bos=True), byte_bpe(bos=False)
    ids = {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0, "vocab_size": VOCAB_SIZE}
    gemma = {
        **SIZES,
        "head_dim": 16,
        "query_pre_attn_scalar": 24,
        "sliding_window": 16,
        "rms_norm_eps": 1e-6,
    }
    return {
        "llama3": (
            LlamaConfig(
                **SIZES,
                **ids,
                head_dim=8,
                rms_norm_eps=1e-5,
                tie_word_embeddings=True,
                rope_parameters={**LLAMA3_SCALING, "rope_theta": 5e5},
            ),
            LlamaForCausalLM,
            torch.bfloat16,
            with_bos,
            legacy_rope,
        ),
        "qwen3": (
            Qwen3Config(**SIZES, **ids, head_dim=16, rms_norm_eps=1e-6, tie_word_embeddings=True),
            Qwen3ForCausalLM,
            torch.bfloat16,
            without_bos,
            None,
        ),
        "gemma3": (
            Gemma3TextConfig(
                **gemma,
                **ids,
                layer_types=["sliding_attention", "full_attention"],
                rope_parameters={
                    "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                    "full_attention": {"rope_type": "default", "rope_theta": 1e6},
                },
            ),
            Gemma3ForCausalLM,
            torch.bfloat16,
            with_bos,
            None,
        ),
        "gemma3_fp32": (
            Gemma3TextConfig(
                **{**gemma, "num_hidden_layers": 3},
                **ids,
                layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                rope_parameters={
                    "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                    "full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e6},
                },
                final_logit_softcapping=6.0,
            ),
            Gemma3ForCausalLM,
            torch.float32,
            with_bos,
            legacy_gemma,
        ),
        "gemma2": (
            Gemma2Config(
                **gemma,
                **ids,
                attn_logit_softcapping=5.0,
                final_logit_softcapping=8.0,
                rope_parameters={"rope_type": "default", "rope_theta": 1e4},
            ),
            Gemma2ForCausalLM,
            torch.bfloat16,
            with_bos,
            legacy_gemma2,
        ),
        "phi3": (
            Phi3Config(
                **{**SIZES, "num_key_value_heads": 4},
                **ids,
                sliding_window=16,
                original_max_position_embeddings=128,
                tie_word_embeddings=False,
            ),
            Phi3ForCausalLM,
            torch.bfloat16,
            with_bos,
            legacy_rope,
        ),
    }


def _rewrite(folder, change):
    path = folder / "config.json"
    config = change(json.loads(path.read_text(encoding="utf-8")))
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def legacy_rope(folder):
    """``rope_theta`` and ``rope_scaling`` on top, as Llama 3.2 and Phi-3 ship them."""

    def change(config):
        rope = dict(config.pop("rope_parameters"))
        config["rope_theta"] = rope.pop("rope_theta")
        if rope.pop("partial_rotary_factor", 1.0) != 1.0:
            raise SystemExit(f"{folder.name}: partial rotary")
        config["rope_scaling"] = None if rope.get("rope_type") == "default" else rope
        return config

    _rewrite(folder, change)


def legacy_gemma(folder):
    """Gemma 3's released layout: global and local bases on top, the pattern, no layer_types."""

    def change(config):
        rope = config.pop("rope_parameters")
        full, local = dict(rope["full_attention"]), rope["sliding_attention"]
        config["rope_theta"] = full.pop("rope_theta")
        config["rope_local_base_freq"] = local["rope_theta"]
        config["rope_scaling"] = None if full.get("rope_type") == "default" else full
        types = config.pop("layer_types")
        config.pop("_sliding_window_pattern")  # transformers' own copy; released files lack it
        config["sliding_window_pattern"] = 2
        derived = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(3)]
        if derived != types:
            raise SystemExit(f"{folder.name}: the pattern does not give {types}")
        return config

    _rewrite(folder, change)


def check_windows(name, arrays):
    """Gemma 3's local layers see 16 tokens of the long text, its global layers all of them."""
    config = json.loads(str(arrays["config_json"]))
    if "layer_types" in config:
        types = config["layer_types"]
    else:
        pattern = config.get("sliding_window_pattern", 2)  # Gemma 2's: every other layer
        n_layers = config["num_hidden_layers"]
        types = [
            "sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n_layers)
        ]
    weights = arrays["long/attentions"]
    i, j = np.indices(weights.shape[-2:])
    for layer, kind in enumerate(types):
        far = weights[layer][:, j <= i - config["sliding_window"]]
        if (kind == "sliding_attention") != (not far.any()):
            raise SystemExit(f"{name}: layer {layer} is not {kind}")


def legacy_gemma2(folder):
    """Gemma 2's released layout: ``rope_theta`` on top, no ``layer_types`` (every other local)."""

    def change(config):
        config["rope_theta"] = config.pop("rope_parameters")["rope_theta"]
        types = config.pop("layer_types")
        if types != ["sliding_attention", "full_attention"]:
            raise SystemExit(f"{folder.name}: layer_types {types}")
        return config

    _rewrite(folder, change)


def main():
    torch.use_deterministic_algorithms(True)
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    versions = (
        f"torch {torch.__version__}, transformers {transformers.__version__}, "
        f"tokenizers {tokenizers.__version__}"
    )
    for name, (config, model_class, dtype, tokenizer, rewrite) in families().items():
        folder = OUT / name
        write_checkpoint(folder, config, model_class, dtype, tokenizer, legacy=False)
        if rewrite is not None:
            rewrite(folder)
        arrays = reference(folder, model_class)
        arrays["versions"] = np.array(versions)
        if name.startswith("gemma"):
            check_windows(name, arrays)
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
