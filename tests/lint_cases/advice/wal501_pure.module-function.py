"""WAL501: a method cache on a method that does not read the instance."""

import functools

import torch

CODE = "WAL501"
HOLD = "cache"


@functools.cache
def _pieces(text):
    return tuple(text.lower().split())


class Tokenizer:
    def __init__(self, vocab):
        self.vocab = vocab

    def pieces(self, text):
        return _pieces(text)


def scenario(keep):
    tokenizer = Tokenizer(torch.ones(8))
    keep(tokenizer.vocab)
    return [tokenizer.pieces("A b"), tokenizer.pieces("A b"), tokenizer.pieces("c")]
