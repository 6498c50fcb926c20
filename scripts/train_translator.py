"""Train the decoder page's toy translator and write ``assets/translator.npz``.

Run once at development time; the result is committed and the app never needs PyTorch.
The task is :mod:`engine.dates`: spelled-out dates to ISO form ("the third of march
2021" → "2021-03-03"), word-level source, character-level target. The model is
:mod:`engine.seq2seq`'s architecture written again in PyTorch, with its parameters
named exactly as the engine's weights file names them and stored as (d_in, d_out), so
exporting is a copy. Training is deterministic given the seed (seeded initialisation
and batches, deterministic algorithms, two threads).

After training, the script loads the exported file with the NumPy engine and reports:
the largest difference between the engine's logits and PyTorch's on a few held-out
examples, and the held-out exact-match accuracy of the engine's greedy decoding
(``engine.seq2seq.translate``), the number docs/benchmarks.md quotes.

Needs torch, a development tool, not a project dependency::

    pip install torch==2.13.0
    python scripts/train_translator.py
"""

import argparse
import math
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from engine import dates, seq2seq
from engine.positional import sinusoidal_positional_encoding

CONFIG = seq2seq.TranslatorConfig(d_model=64, n_heads=4, d_ff=128, n_layers=2)
TORCH_SEED = 0
EPOCHS = 6
BATCH = 64
PEAK_LR = 2e-3
WARMUP_STEPS = 300
#: Filler words ("the", "of") read as <unk> this often in training, so <unk> learns a use.
UNK_RATE = 0.1
PARITY_EXAMPLES = 8
MAX_POSITIONS = 64


class Attention(nn.Module):
    """Multi-head attention without biases, as :func:`engine.attention.multi_head_attention`."""

    def __init__(self, d, n_heads):
        super().__init__()
        self.n_heads = n_heads
        for name in ("w_q", "w_k", "w_v", "w_o"):
            setattr(self, name, nn.Parameter(nn.init.xavier_uniform_(torch.empty(d, d))))

    def forward(self, x, memory, mask):
        """Queries from ``x`` [B, t, d], keys and values from ``memory`` [B, n, d] -> [B, t, d].

        ``mask`` [B or 1, 1, t or 1, n] is True where attention is allowed.
        """

        def split(z):  # [B, n, d] -> [B, heads, n, d_head]
            return z.view(z.shape[0], z.shape[1], self.n_heads, -1).transpose(1, 2)

        q, k, v = split(x @ self.w_q), split(memory @ self.w_k), split(memory @ self.w_v)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])  # [B, heads, t, n]
        weights = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(x.shape)  # [B, t, d]
        return out @ self.w_o


class Norm(nn.Module):
    """LayerNorm with the engine's parameter names ``g`` and ``b``."""

    def __init__(self, d):
        super().__init__()
        self.g, self.b = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))

    def forward(self, x):
        """[..., d] -> [..., d]."""
        return nn.functional.layer_norm(x, x.shape[-1:], self.g, self.b, eps=seq2seq.LAYER_NORM_EPS)


class FeedForward(nn.Module):
    """ReLU feed-forward block, ``max(0, x W1 + b1) W2 + b2``."""

    def __init__(self, d, d_ff):
        super().__init__()
        self.w1 = nn.Parameter(nn.init.xavier_uniform_(torch.empty(d, d_ff)))
        self.b1 = nn.Parameter(torch.zeros(d_ff))
        self.w2 = nn.Parameter(nn.init.xavier_uniform_(torch.empty(d_ff, d)))
        self.b2 = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        """[..., d] -> [..., d]."""
        return torch.relu(x @ self.w1 + self.b1) @ self.w2 + self.b2


class EncoderLayer(nn.Module):
    """Post-LayerNorm encoder layer: self-attention, then the feed-forward block."""

    def __init__(self, c):
        super().__init__()
        self.self_attn, self.norm1 = Attention(c.d_model, c.n_heads), Norm(c.d_model)
        self.ffn, self.norm2 = FeedForward(c.d_model, c.d_ff), Norm(c.d_model)

    def forward(self, x, source_mask):
        """[B, n, d] -> [B, n, d]; ``source_mask`` hides padding keys."""
        x = self.norm1(x + self.self_attn(x, x, source_mask))
        return self.norm2(x + self.ffn(x))


class DecoderLayer(nn.Module):
    """Post-LayerNorm decoder layer: masked self-attention, cross-attention, feed-forward."""

    def __init__(self, c):
        super().__init__()
        self.self_attn, self.norm1 = Attention(c.d_model, c.n_heads), Norm(c.d_model)
        self.cross_attn, self.norm2 = Attention(c.d_model, c.n_heads), Norm(c.d_model)
        self.ffn, self.norm3 = FeedForward(c.d_model, c.d_ff), Norm(c.d_model)

    def forward(self, y, memory, causal, source_mask):
        """[B, t, d] and the encoder's output [B, n, d] -> [B, t, d]."""
        y = self.norm1(y + self.self_attn(y, y, causal))
        y = self.norm2(y + self.cross_attn(y, memory, source_mask))
        return self.norm3(y + self.ffn(y))


class Output(nn.Module):
    """The linear layer to the target vocabulary."""

    def __init__(self, d, n_vocab):
        super().__init__()
        self.w = nn.Parameter(nn.init.xavier_uniform_(torch.empty(d, n_vocab)))
        self.b = nn.Parameter(torch.zeros(n_vocab))

    def forward(self, y):
        """[..., d] -> [..., n_vocab]."""
        return y @ self.w + self.b


class Translator(nn.Module):
    """The engine's model; ``state_dict()`` keys are the weights file's names."""

    def __init__(self, c, n_source_vocab, n_target_vocab):
        super().__init__()
        self.d_model = c.d_model
        std = c.d_model**-0.5  # × √d_model on the way in gives unit-variance embeddings
        self.source_embedding = nn.Parameter(torch.randn(n_source_vocab, c.d_model) * std)
        self.target_embedding = nn.Parameter(torch.randn(n_target_vocab, c.d_model) * std)
        self.encoder = nn.ModuleList(EncoderLayer(c) for _ in range(c.n_layers))
        self.decoder = nn.ModuleList(DecoderLayer(c) for _ in range(c.n_layers))
        self.out = Output(c.d_model, n_target_vocab)
        pe = sinusoidal_positional_encoding(MAX_POSITIONS, c.d_model)  # the engine's table
        self.register_buffer("positions", torch.tensor(pe, dtype=torch.float32), persistent=False)

    def embed(self, ids, table):
        """Token ids [B, n] -> embeddings × √d_model plus positions [B, n, d]."""
        return table[ids] * math.sqrt(self.d_model) + self.positions[: ids.shape[1]]

    def forward(self, source, source_mask, target_in):
        """Source ids [B, n], its padding mask [B, n], decoder inputs [B, t] -> logits [B, t, V]."""
        key_mask = source_mask[:, None, None, :]  # [B, 1, 1, n_src]
        x = self.embed(source, self.source_embedding)
        for layer in self.encoder:
            x = layer(x, key_mask)
        t = target_in.shape[1]
        causal = torch.ones(t, t, dtype=torch.bool).tril()[None, None]  # [1, 1, t, t]
        y = self.embed(target_in, self.target_embedding)
        for layer in self.decoder:
            y = layer(y, x, causal, key_mask)
        return self.out(y)


def vocabularies():
    source = [seq2seq.PAD, seq2seq.UNK, *dates.source_words()]
    target = [seq2seq.PAD, seq2seq.START, seq2seq.END, *"-0123456789"]
    return source, target


def tensors(examples, source_vocab, target_vocab):
    """Padded id tensors: source [N, n_max], decoder input and labels [N, t]."""
    s_index = {w: i for i, w in enumerate(source_vocab)}
    t_index = {w: i for i, w in enumerate(target_vocab)}
    sources = [[s_index[w] for w in seq2seq.split_source(ex.source)] for ex in examples]
    targets = [
        [
            t_index[seq2seq.START],
            *(t_index[c] for c in seq2seq.split_target(ex.target)),
            t_index[seq2seq.END],
        ]
        for ex in examples
    ]
    pad = s_index[seq2seq.PAD]
    n_max, t_max = max(map(len, sources)), max(map(len, targets))
    source = torch.full((len(examples), n_max), pad, dtype=torch.long)
    target = torch.full((len(examples), t_max), t_index[seq2seq.PAD], dtype=torch.long)
    for i, (s, t) in enumerate(zip(sources, targets, strict=True)):
        source[i, : len(s)] = torch.tensor(s)
        target[i, : len(t)] = torch.tensor(t)
    return source, target[:, :-1], target[:, 1:]


def train(model, source, target_in, labels, source_vocab, target_vocab, epochs):
    pad, unk = source_vocab.index(seq2seq.PAD), source_vocab.index(seq2seq.UNK)
    target_pad = target_vocab.index(seq2seq.PAD)
    fillers = torch.tensor([source_vocab.index(w) for w in ("the", "of")])
    generator = torch.Generator().manual_seed(TORCH_SEED)
    optimiser = torch.optim.AdamW(model.parameters(), lr=PEAK_LR, weight_decay=0.01)
    steps_per_epoch = math.ceil(len(source) / BATCH)
    total = epochs * steps_per_epoch

    def schedule(step):  # linear warm-up, then cosine decay to 0
        if step < WARMUP_STEPS:
            return (step + 1) / WARMUP_STEPS
        return 0.5 * (1 + math.cos(math.pi * (step - WARMUP_STEPS) / (total - WARMUP_STEPS)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimiser, schedule)
    model.train()
    for epoch in range(epochs):
        order = torch.randperm(len(source), generator=generator)
        running = 0.0
        for start in range(0, len(source), BATCH):
            batch = order[start : start + BATCH]
            s = source[batch]
            drop = torch.isin(s, fillers) & (torch.rand(s.shape, generator=generator) < UNK_RATE)
            s = s.masked_fill(drop, unk)
            logits = model(s, s != pad, target_in[batch])
            loss = nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]),
                labels[batch].reshape(-1),
                ignore_index=target_pad,
            )
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            scheduler.step()
            running += loss.item() * len(batch)
        print(f"epoch {epoch + 1:2d}/{epochs}  loss {running / len(source):.5f}", flush=True)


def parity(model, numpy_model, examples, source_vocab, target_vocab):
    """Largest |logit difference| between PyTorch and the engine, teacher-forced."""
    model.eval()
    worst = 0.0
    for ex in examples:
        source, target_in, _ = tensors([ex], source_vocab, target_vocab)
        with torch.no_grad():
            expected = model(source, torch.ones_like(source, dtype=torch.bool), target_in)[0]
        memory = seq2seq.encode(numpy_model, source[0].numpy()).memory
        got = seq2seq.decode(numpy_model, memory, target_in[0].numpy()).logits
        worst = max(worst, float(np.max(np.abs(got - expected.numpy()))))
    return worst


def exact_match(numpy_model, examples):
    """Share of examples whose greedy NumPy translation equals the target exactly."""
    hits = 0
    for ex in examples:
        translation = seq2seq.translate(numpy_model, ex.source)
        hits += translation.finished and translation.text == ex.target
    return hits / len(examples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--out", type=Path, default=seq2seq.TRANSLATOR_PATH)
    args = parser.parse_args()

    torch.set_num_threads(2)
    torch.set_flush_denormal(True)  # tiny late-training gradients are subnormal and slow on CPU
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(TORCH_SEED)
    train_set, held_out = dates.dataset(dates.SEED, dates.N_TRAIN, dates.N_HELD_OUT)
    source_vocab, target_vocab = vocabularies()
    model = Translator(CONFIG, len(source_vocab), len(target_vocab))
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"{len(train_set):,} training and {len(held_out):,} held-out sentences; "
        f"vocabularies {len(source_vocab)} words, {len(target_vocab)} characters; "
        f"{CONFIG}, {n_params:,} parameters"
    )

    started = time.perf_counter()
    data = tensors(train_set, source_vocab, target_vocab)
    train(model, *data, source_vocab, target_vocab, args.epochs)
    minutes = (time.perf_counter() - started) / 60

    weights = {name: p.detach().numpy() for name, p in model.state_dict().items()}
    seq2seq.save_translator(args.out, CONFIG, source_vocab, target_vocab, weights)
    numpy_model = seq2seq.load_translator(args.out)
    error = parity(model, numpy_model, held_out[:PARITY_EXAMPLES], source_vocab, target_vocab)
    accuracy = exact_match(numpy_model, held_out)
    print(f"training time: {minutes:.1f} min on {torch.get_num_threads()} threads")
    print(f"NumPy vs PyTorch logits, max |difference|: {error:.2e}")
    print(f"held-out exact match (NumPy greedy decoding): {accuracy:.2%} of {len(held_out):,}")
    print(f"weights: {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")
    if error > 1e-4:
        raise SystemExit("the NumPy engine does not reproduce PyTorch's logits")


if __name__ == "__main__":
    main()
