from __future__ import annotations

import os
import sys
from typing import Any, ClassVar

from setuptools import Extension, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_ext import build_ext

# The C extensions are optional: a machine without a C compiler still installs whyalive and
# runs the pure-Python twin (whyalive.graph.core), which gives the same results, slower,
# and the Python fallbacks of whyalive.capture.interrupts.
# Such a build says so on stderr and, when no extension was built, makes a py3-none-any
# wheel rather than one tagged for this interpreter. WHYALIVE_BUILD_PURE=1 builds the pure
# wheel on purpose.
PURE = os.environ.get("WHYALIVE_BUILD_PURE") == "1"
NOT_BUILT = (
    "WARNING: whyalive: the C graph core (whyalive.graph._fastgraph) was not built{why}; "
    "whyalive will run its pure-Python core (same results, several times slower on big "
    "garbage) and `whyalive --version` will say so. Install a C compiler and reinstall "
    "to build it."
)


class BuildExt(build_ext):
    """Builds the optional extensions and remembers which were built and which failed."""

    built: ClassVar[set[str]] = set()
    failed: ClassVar[set[str]] = set()

    def build_extension(self, ext: Any) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:
            BuildExt.failed.add(ext.name)
            why = f" (compiling {ext.sources[0]} failed: {type(error).__name__})"
            if ext.name == "whyalive.graph._fastgraph":
                sys.stderr.write(NOT_BUILT.format(why=why) + "\n")
            raise  # setuptools skips an optional extension that failed, with its own warning
        BuildExt.built.add(ext.name)


class BdistWheel(bdist_wheel):
    """A wheel without any C extension is pure: tagged py3-none-any, installed in purelib."""

    def run(self) -> None:
        if not self.skip_build:
            self.run_command("build")
        if BuildExt.failed and not BuildExt.built:
            # No extension left to build or install: the wheel holds only Python files.
            self.distribution.ext_modules = []
            self.root_is_pure = True
        super().run()


if PURE:
    sys.stderr.write(NOT_BUILT.format(why=" (WHYALIVE_BUILD_PURE=1)") + "\n")
setup(
    ext_modules=[]
    if PURE
    else [
        Extension("whyalive.graph._fastgraph", ["src/whyalive/graph/_fastgraph.c"], optional=True),
        # Interrupt-safe entries into cleanup (whyalive.capture.interrupts); without it the
        # same logic runs in Python, which cannot protect a function's first bytecode.
        Extension(
            "whyalive.capture._interrupts", ["src/whyalive/capture/_interrupts.c"], optional=True
        ),
        # The loop of whyalive.kinds.torch_dense.DenseReader.read_many, in C (the monitor
        # reads every step's tensors); without it the same loop runs in Python.
        Extension("whyalive.kinds._dense", ["src/whyalive/kinds/_dense.c"], optional=True),
    ],
    cmdclass={"build_ext": BuildExt, "bdist_wheel": BdistWheel},
)
