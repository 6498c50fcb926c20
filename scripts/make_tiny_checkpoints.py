"""Write tests/data/tiny_models/: a tiny random checkpoint per model family, and its references.

Each family gets a Hugging Face checkpoint folder (``config.json``, ``model.safetensors``,
``tokenizer.json`` and the small tokenizer files transformers writes beside it), made with
transformers' own classes so that key names, config fields and tokenizer pipelines are the
real ones, and a sibling ``<family>.npz`` holding what transformers computes from that
folder: the token ids, every layer's attention, every hidden state and, for GPT-2, the logits
and 10 greedy tokens after the short text (``short/greedy``, with transformers' own key/value
cache). The engine's parity tests read both; they never import PyTorch.

The models are 2 layers, 4 heads, hidden size 32, randomly initialised from a fixed seed
with weights of std 0.25, not the usual 0.02, so that attention maps are far from
uniform and a wrong transpose, offset or epsilon shows. The tokenizers (WordPiece and
byte-level BPE, a few hundred tokens) are trained with the ``tokenizers`` library on the
app's own small corpus, ``assets/bpe-corpus.txt``.

Run once, by hand, with the network off; it needs torch and transformers, which are
development tools, not project dependencies:

    python3 -m venv /tmp/torchenv
    /tmp/torchenv/bin/pip install torch==2.13.0 transformers safetensors tokenizers
    HF_HUB_OFFLINE=1 /tmp/torchenv/bin/python scripts/make_tiny_checkpoints.py

``--greedy`` adds ``short/greedy`` to the existing gpt2.npz alone, its folder unchanged.
"""

import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"

import shutil
import sys
from pathlib import Path

import numpy as np
import tokenizers
import torch
import transformers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import (
    AutoTokenizer,
    BertConfig,
    BertForMaskedLM,
    BertModel,
    BertTokenizer,
    DistilBertConfig,
    DistilBertModel,
    DistilBertTokenizer,
    ElectraConfig,
    ElectraForPreTraining,
    ElectraModel,
    GPT2Config,
    GPT2LMHeadModel,
    GPT2Tokenizer,
    RobertaConfig,
    RobertaModel,
    RobertaTokenizer,
)
from transformers.pytorch_utils import Conv1D

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "assets" / "bpe-corpus.txt"
OUT = ROOT / "tests" / "data" / "tiny_models"

SEED = 27
WEIGHT_STD = 0.25  # 12.5 × initializer_range: rows 8-15 × the uniform weight on average
BIAS_STD = 0.1  # biases and LayerNorm shifts random too, so a dropped one shows
GAIN_STD = 0.1  # LayerNorm gains 1 + N(0, 0.1), so a gain read as ones shows
VOCAB_SIZE = 600
WORDPIECE_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CONTINUED = 0xF0000  # start of a private-use plane, see train_wordpiece

SIZES = {"layers": 2, "heads": 4, "hidden": 32, "intermediate": 64, "positions": 128}

TEXTS = {
    "short": "The cat sat on the mat.",
    "accents": "Café naïve in Zürich: 東京, ☃ and 🙂 — the model still reads it.",
    "long": (
        "The restaurant refused to serve me a ham sandwich because it only cooks vegetarian "
        "food. Each token becomes a vector, and self-attention lets every token look at every "
        "other token."
    ),
}
#: Only for the families with two token types: the second segment's tokens have type 1.
PAIR = ("The animal did not cross the street.", "It was too tired.")
LONG_TOKENS = (40, 64)
#: Greedy tokens after the short text that a causal model's reference holds.
N_GREEDY = 10
#: All that a folder may hold: no pickle (pytorch_model.bin), no vocab.txt or merges.txt.
FOLDER_FILES = {
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
}


def train_wordpiece(lowercase):
    """A BERT WordPiece vocabulary: specials, characters, "##" characters, then learned pieces.

    The WordPiece trainer numbers the "##" forms of the characters in hash-map order, so
    its ties, and with them its vocabulary, change from run to run. The BPE trainer numbers
    a sorted alphabet and repeats itself: it learns here on words whose non-initial
    characters are moved to a private-use plane, and those pieces become the "##" ones.
    """
    normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    text = normalizer.normalize_str(CORPUS.read_text(encoding="utf-8"))
    words = [word for word, _ in pre_tokenizers.BertPreTokenizer().pre_tokenize_str(text)]
    marked = [word[0] + "".join(chr(CONTINUED + ord(c)) for c in word[1:]) for word in words]
    alphabet = sorted(set(text) - set(" \n"))
    tokenizer = Tokenizer(models.BPE())
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=WORDPIECE_SPECIALS,
        initial_alphabet=alphabet + [chr(CONTINUED + ord(c)) for c in alphabet],
        show_progress=False,
    )
    tokenizer.train_from_iterator(marked, trainer)
    vocab = {}
    for token, _ in sorted(tokenizer.get_vocab().items(), key=lambda item: item[1]):
        plain = "".join(chr(ord(c) - CONTINUED) if ord(c) >= CONTINUED else c for c in token)
        vocab["##" + plain if ord(token[0]) >= CONTINUED else plain] = len(vocab)
    return vocab


def train_byte_bpe(special_tokens):
    """A byte-level BPE vocabulary and merges (GPT-2's and RoBERTa's kind)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train([str(CORPUS)], trainer)
    state = json.loads(tokenizer.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in state["merges"]]
    return state["vocab"], merges


def scale_up(model):
    """Redraw every parameter from a seeded generator, larger than transformers' init."""
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for module in model.modules():
            for name, parameter in module.named_parameters(recurse=False):
                noise = torch.randn(parameter.shape, generator=generator)
                if isinstance(module, torch.nn.LayerNorm) and name == "weight":
                    parameter.copy_(1 + GAIN_STD * noise)
                elif isinstance(module, torch.nn.Embedding):
                    parameter.copy_(WEIGHT_STD * noise)
                elif isinstance(module, (torch.nn.Linear, Conv1D)) and name == "weight":
                    # nn.Linear is [out, in], Conv1D [in, out]; a wider input gets smaller
                    # weights so that no layer grows the residual stream more than another.
                    fan_in = parameter.shape[1 if isinstance(module, torch.nn.Linear) else 0]
                    parameter.copy_(WEIGHT_STD * (SIZES["hidden"] / fan_in) ** 0.5 * noise)
                else:
                    parameter.copy_(BIAS_STD * noise)


def families():
    """Each family: its config, the class saved, the class run, and its tokenizer."""
    uncased = train_wordpiece(lowercase=True)
    cased = train_wordpiece(lowercase=False)
    roberta_vocab, roberta_merges = train_byte_bpe(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    gpt2_vocab, gpt2_merges = train_byte_bpe(["<|endoftext|>"])
    n, h, d, ff, p = (SIZES[k] for k in ("layers", "heads", "hidden", "intermediate", "positions"))
    bert_sizes = {
        "hidden_size": d,
        "num_hidden_layers": n,
        "num_attention_heads": h,
        "intermediate_size": ff,
        "max_position_embeddings": p,
    }
    endoftext = gpt2_vocab["<|endoftext|>"]
    return {
        # BertModel without a prefix, as MiniLM, BGE and E5 ship: GELU (erf), eps 1e-12.
        "bert": (
            BertConfig(vocab_size=len(uncased), type_vocab_size=2, pad_token_id=0, **bert_sizes),
            BertModel,
            BertModel,
            BertTokenizer(vocab=uncased, do_lower_case=True, model_max_length=p),
        ),
        # BertForMaskedLM (keys under "bert.", an MLM head to ignore), cased WordPiece,
        # tanh-approximated GELU and a LayerNorm epsilon far from BERT's.
        "bert_variant": (
            BertConfig(
                vocab_size=len(cased),
                type_vocab_size=2,
                pad_token_id=0,
                hidden_act="gelu_new",
                layer_norm_eps=1e-3,
                **bert_sizes,
            ),
            BertForMaskedLM,
            BertModel,
            BertTokenizer(vocab=cased, do_lower_case=False, model_max_length=p),
        ),
        # Positions start at pad_token_id + 1 = 2; one token type; byte-level BPE.
        "roberta": (
            RobertaConfig(
                vocab_size=len(roberta_vocab),
                type_vocab_size=1,
                pad_token_id=roberta_vocab["<pad>"],
                bos_token_id=roberta_vocab["<s>"],
                eos_token_id=roberta_vocab["</s>"],
                layer_norm_eps=1e-5,
                **{**bert_sizes, "max_position_embeddings": p + 2},
            ),
            RobertaModel,
            RobertaModel,
            RobertaTokenizer(vocab=roberta_vocab, merges=roberta_merges, model_max_length=p),
        ),
        # Its own names (dim, hidden_dim, q_lin ... out_lin, sa_layer_norm); no token types.
        "distilbert": (
            DistilBertConfig(
                vocab_size=len(uncased),
                dim=d,
                hidden_dim=ff,
                n_layers=n,
                n_heads=h,
                max_position_embeddings=p,
                sinusoidal_pos_embds=False,
                activation="gelu",
                pad_token_id=0,
            ),
            DistilBertModel,
            DistilBertModel,
            DistilBertTokenizer(vocab=uncased, do_lower_case=True, model_max_length=p),
        ),
        # The discriminator as released (keys under "electra."), embeddings of size 16
        # projected to the hidden size 32 before the first layer.
        "electra": (
            ElectraConfig(
                vocab_size=len(uncased),
                embedding_size=16,
                type_vocab_size=2,
                pad_token_id=0,
                **bert_sizes,
            ),
            ElectraForPreTraining,
            ElectraModel,
            BertTokenizer(vocab=uncased, do_lower_case=True, model_max_length=p),
        ),
        # Conv1D weights [in, out], learned positions, pre-LN, gelu_new, lm_head tied to
        # wte; n_inner left null, so the MLP is 4 × n_embd wide as in the released GPT-2.
        "gpt2": (
            GPT2Config(
                vocab_size=len(gpt2_vocab),
                n_positions=p,
                n_embd=d,
                n_layer=n,
                n_head=h,
                bos_token_id=endoftext,
                eos_token_id=endoftext,
            ),
            GPT2LMHeadModel,
            GPT2LMHeadModel,
            GPT2Tokenizer(vocab=gpt2_vocab, merges=gpt2_merges, model_max_length=p),
        ),
    }


def write_checkpoint(folder, config, saved_class, tokenizer):
    """Save a seeded, scaled-up model of saved_class and its tokenizer into folder."""
    torch.manual_seed(SEED)
    model = saved_class(config).float().eval()
    scale_up(model)
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    unexpected = {f.name for f in folder.iterdir()} - FOLDER_FILES
    if unexpected:
        raise SystemExit(f"{folder.name}: transformers wrote {sorted(unexpected)} too")


def reference(folder, run_class, config):
    """Everything transformers computes from folder, for each text: arrays keyed name/field."""
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    rust = Tokenizer.from_file(str(folder / "tokenizer.json"))
    model, info = run_class.from_pretrained(
        folder, local_files_only=True, attn_implementation="eager", output_loading_info=True
    )
    # A masked-LM checkpoint has no pooler, which the reference does not use.
    missing = {k for k in info["missing_keys"] if not k.startswith("pooler.")}
    if missing or info["mismatched_keys"]:
        raise SystemExit(f"{folder.name}: reload lost weights: {info}")
    model.eval()
    has_types = getattr(config, "type_vocab_size", 0) >= 2
    inputs = {**TEXTS, "pair": PAIR} if has_types else dict(TEXTS)
    arrays = {}
    for name, text in inputs.items():
        pair = (text,) if isinstance(text, str) else text
        encoded = tokenizer(*pair, return_token_type_ids=True)
        ids = encoded["input_ids"]
        rust_ids = rust.encode(*pair).ids
        if rust_ids != ids:
            raise SystemExit(f"{folder.name}/{name}: tokenizers gives {rust_ids}, not {ids}")
        types = encoded["token_type_ids"]
        kwargs = {"token_type_ids": torch.tensor([types])} if has_types else {}
        with torch.inference_mode():
            out = model(
                torch.tensor([ids]), output_attentions=True, output_hidden_states=True, **kwargs
            )
        arrays[f"{name}/text"] = np.array(text)
        arrays[f"{name}/ids"] = np.array(ids, dtype=np.int64)
        arrays[f"{name}/token_type_ids"] = np.array(types, dtype=np.int64)
        arrays[f"{name}/tokens"] = np.array(tokenizer.convert_ids_to_tokens(ids))
        arrays[f"{name}/attentions"] = torch.stack(out.attentions)[:, 0].numpy()
        arrays[f"{name}/hidden_states"] = torch.stack(out.hidden_states)[:, 0].numpy()
        if hasattr(out, "logits"):
            arrays[f"{name}/logits"] = out.logits[0].numpy()
    if hasattr(out, "logits"):
        arrays["short/greedy"] = greedy(model, arrays["short/ids"])
    arrays.update(description(model, model.config))
    arrays["config_json"] = np.array((folder / "config.json").read_text(encoding="utf-8"))
    n_long = len(arrays["long/ids"])
    if not LONG_TOKENS[0] <= n_long <= LONG_TOKENS[1]:
        raise SystemExit(f"{folder.name}: the long text is {n_long} tokens, not {LONG_TOKENS}")
    return arrays


def greedy(model, ids):
    """N_GREEDY tokens after ids, the largest logit each, by transformers' generate (its cache)."""
    with torch.inference_mode():  # no end-of-text token stops it: N_GREEDY argmaxes
        out = model.generate(
            torch.from_numpy(np.asarray(ids, dtype=np.int64)[None]),
            max_new_tokens=N_GREEDY,
            do_sample=False,
            use_cache=True,
            eos_token_id=None,
            pad_token_id=0,
        )
    tokens = out[0, len(ids) :].numpy().astype(np.int64)
    if len(tokens) != N_GREEDY:
        raise SystemExit(f"generate stopped after {len(tokens)} tokens")
    return tokens


def add_greedy(family="gpt2"):
    """``short/greedy`` into the existing <family>.npz, every other array as it was."""
    folder = OUT / family
    model = GPT2LMHeadModel.from_pretrained(folder, local_files_only=True).eval()
    with np.load(OUT / f"{family}.npz") as data:
        arrays = {key: data[key] for key in data.files}
    arrays["short/greedy"] = greedy(model, arrays["short/ids"])
    np.savez_compressed(OUT / f"{family}.npz", **arrays)
    print(f"{family}: greedy {arrays['short/greedy'].tolist()}")


def description(model, config):
    """What the forward pass needs, keyed model/<name> in the engine's names, as numbers.

    Read from the modules that ran where the config does not say it: DistilBERT's LayerNorm
    epsilon is fixed at 1e-12 in its code, and GPT-2's MLP is 4 × n_embd wide when n_inner
    is null. The config.json text is stored too, as config_json.
    """
    (eps,) = {m.eps for m in model.modules() if isinstance(m, torch.nn.LayerNorm)}
    d_model = config.hidden_size
    if config.model_type == "gpt2":
        d_ff, activation = config.n_inner or 4 * d_model, config.activation_function
    elif config.model_type == "distilbert":
        d_ff, activation = config.hidden_dim, config.activation
    else:
        d_ff, activation = config.intermediate_size, config.hidden_act
    values = {
        "model_type": config.model_type,
        "n_vocab": config.vocab_size,
        "n_positions": config.max_position_embeddings,
        "n_types": getattr(config, "type_vocab_size", 0),
        "n_layers": config.num_hidden_layers,
        "n_heads": config.num_attention_heads,
        "d_model": d_model,
        "d_embedding": getattr(config, "embedding_size", d_model),
        "d_ff": d_ff,
        "activation": activation,
        "eps": eps,
        # RoBERTa numbers positions from pad_token_id + 1, leaving 0 and 1 unused.
        "position_offset": config.pad_token_id + 1 if config.model_type == "roberta" else 0,
        "causal": config.model_type == "gpt2",
    }
    return {f"model/{k}": np.array(v) for k, v in values.items()}


def main():
    torch.use_deterministic_algorithms(True)
    if "--greedy" in sys.argv[1:]:
        add_greedy()
        return
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    OUT.mkdir(parents=True, exist_ok=True)
    versions = (
        f"torch {torch.__version__}, transformers {transformers.__version__}, "
        f"tokenizers {tokenizers.__version__}"
    )
    for family, (config, saved_class, run_class, tokenizer) in families().items():
        folder = OUT / family
        write_checkpoint(folder, config, saved_class, tokenizer)
        arrays = reference(folder, run_class, config)
        arrays["versions"] = np.array(versions)
        np.savez_compressed(OUT / f"{family}.npz", **arrays)
        files = sorted(folder.iterdir())
        size = sum(f.stat().st_size for f in files)
        lengths = ", ".join(f"{k[:-4]} {len(v)}" for k, v in arrays.items() if k.endswith("/ids"))
        print(
            f"{family:13} {size / 1e3:6.0f} kB folder ({', '.join(f.name for f in files)}); "
            f"{(OUT / f'{family}.npz').stat().st_size / 1e3:4.0f} kB reference; tokens: {lengths}"
        )


if __name__ == "__main__":
    main()
