"""Eval cases for 9xx (off by default). Expectations: `# CODE: line, col` (col 0-based)."""


class Holder:
    def __init__(self, scale):
        self.double = lambda x: x * 2  # WAL901: 6, 8
        self.scaled = lambda x: x * scale  # WAL901: 7, 8
        self.captures_self = lambda: self

        def local(x):
            return x

        self.local = local  # WAL901: 13, 8
        self.value = 3


def hooks(t, buffers):
    t.register_hook(lambda g: buffers.append(g))  # WAL902: 18, 4
    t.register_hook(lambda g: g * 2)
    t.register_hook(lambda g: g * t)
