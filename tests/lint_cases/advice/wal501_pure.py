"""WAL501: a method cache on a method that does not read the instance."""

import functools

import torch

CODE = "WAL501"
HOLD = "cache"


class Tokenizer:
    def __init__(self, vocab):
        self.vocab = vocab

    @functools.cache
    def pieces(self, text):
        return tuple(text.lower().split())


def scenario(keep):
    tokenizer = Tokenizer(torch.ones(8))
    keep(tokenizer.vocab)
    return [tokenizer.pieces("A b"), tokenizer.pieces("A b"), tokenizer.pieces("c")]
