"""Train the small BPE tokenizer the app offers beside words and WordPiece.

Run once at development time; the result, ``assets/bpe-tokenizer.json``, is committed.
Byte-level BPE (as in GPT-2) so that any text, emoji and CJK included, tokenizes
without an unknown token. Usage: ``python scripts/train_bpe.py``.
"""

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from engine.resources import ASSETS

VOCAB_SIZE = 800


def main():
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train([str(ASSETS / "bpe-corpus.txt")], trainer)
    tokenizer.save(str(ASSETS / "bpe-tokenizer.json"))
    print(f"vocabulary: {tokenizer.get_vocab_size()} tokens -> {ASSETS / 'bpe-tokenizer.json'}")


if __name__ == "__main__":
    main()
