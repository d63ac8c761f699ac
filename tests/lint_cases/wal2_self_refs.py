"""Eval cases for 2xx (self-references). Expectations: `# CODE: line, col` (col 0-based)."""
import functools
import weakref


class Trainer:
    def __init__(self, model):
        self.model = model
        self.cb = self.on_step  # WAL201: 9, 8
        self.callbacks = [self.on_step, self.on_end]  # WAL201: 10, 8
        self.table = {"step": self.on_step}  # WAL201: 11, 8
        self.bound = functools.partial(self.on_step, 1)  # WAL201: 12, 8
        self.hooks = []
        self.hooks.append(self.on_end)  # WAL201: 14, 8
        self.weak = weakref.WeakMethod(self.on_step)
        self.plain = type(self).on_step
        self.value = self.on_step()
        self.prop = self.size
        self.static = self.helper
        self.f = lambda: self.model  # WAL202: 20, 8
        self.g = lambda model: model

        def report():
            return self.model

        self.report = report  # WAL202: 26, 8

        def pure(x):
            return x

        self.pure = pure
        local = self.on_step
        local()

    def on_step(self, n=0):
        return n

    def on_end(self):
        pass

    @property
    def size(self):
        return 1

    @staticmethod
    def helper():
        pass

    def register(self):
        self.register_forward_hook(self.on_step)  # WAL203: 50, 8
        self.model.add_callback(self.on_end)  # WAL203: 51, 8
        self.timer.add_done_callback(lambda fut: self.on_end())  # WAL203: 52, 8
        self.model.register_hook(self.on_step)  # WAL203: 53, 8
        other.register_callback(self.on_end)
        self.model.add_callback(lambda: 1)
        self.model.add_callback(weakref.WeakMethod(self.on_end))
        self.model.set_name(self.on_end)

    def nested_closure(self):
        def later():
            self.cb = self.on_end  # WAL201: 61, 12

        return later


class NotAMethod:
    @staticmethod
    def static(self):
        self.cb = self.on_step

    @classmethod
    def klass(cls):
        cls.cb = cls.make

    def make(self):
        pass

    def shadowed(self):
        def inner(self):
            self.cb = self.make

        return inner


def plain_function(self):
    self.cb = self.on_step
    # Not a method, so not WAL202; a lambda that holds the object it is stored on is WAL204.
    self.f = lambda: self  # WAL204: 88, 4


# A store undone in a `finally` is released on every path: no cycle survives the call.
class Trainer(Loader):
    def step(self, batch):
        self.f = lambda: self.batch_size
        self.cb = self.on_step
        try:
            return self.f()
        finally:
            del self.f
            self.cb = None

    def undone_outside_finally(self, batch):
        self.f = lambda: self.batch_size  # WAL202: 103, 8
        result = self.f()
        del self.f
        return result

    def on_step(self):
        pass
