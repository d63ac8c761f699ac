"""WAL501: a method cache on a method that does not read the instance."""

import torch

CODE = "WAL501"
HOLD = "cache"


class Tokenizer:
    def __init__(self, vocab):
        self.vocab = vocab
        self._pieces = {}

    def pieces(self, text):
        if text not in self._pieces:
            self._pieces[text] = tuple(text.lower().split())
        return self._pieces[text]


def scenario(keep):
    tokenizer = Tokenizer(torch.ones(8))
    keep(tokenizer.vocab)
    return [tokenizer.pieces("A b"), tokenizer.pieces("A b"), tokenizer.pieces("c")]
