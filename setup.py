from __future__ import annotations

from setuptools import Extension, setup

# optional=True: a machine without a C compiler still installs whyalive and falls back
# to the pure-Python twin in whyalive.graph.core and the fallbacks in whyalive.interrupts.
setup(
    ext_modules=[
        Extension("whyalive._fastgraph", ["src/whyalive/_fastgraph.c"], optional=True),
        Extension("whyalive._interrupts", ["src/whyalive/_interrupts.c"], optional=True),
    ]
)
