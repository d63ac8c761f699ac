from __future__ import annotations

from setuptools import Extension, setup

# optional=True: a machine without a C compiler still installs whyalive and
# falls back to the pure-Python twin in whyalive.graph.core.
setup(ext_modules=[Extension("whyalive._fastgraph", ["src/whyalive/_fastgraph.c"], optional=True)])
