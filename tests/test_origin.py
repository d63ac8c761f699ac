"""Where a cycle was made: installed code (site-packages, the standard library) or the user's."""

from __future__ import annotations

import json
import os

from whyalive.analysis.origin import installed_part, made_inside


def test_installed_part_of_stdlib_site_packages_and_user_files(tmp_path: os.PathLike[str]) -> None:
    """The stdlib and site-packages are installed code; the user's root is not."""
    root = str(tmp_path)
    assert installed_part(json.__file__, root) == "json/__init__.py"
    venv_file = os.path.join(root, ".venv", "lib", "site-packages", "torch", "fx", "graph.py")
    assert installed_part(venv_file, root) == "torch/fx/graph.py"
    assert installed_part(os.path.join(root, "tests", "test_model.py"), root) is None


def test_made_inside_needs_every_code_member_installed(tmp_path: os.PathLike[str]) -> None:
    """One function of user code makes the cycle the user's; code without a file is neutral."""
    root = str(tmp_path)
    installed = compile("def f():\n    pass\n", "/x/site-packages/pkg/mod.py", "exec")
    generated = compile("def g():\n    pass\n", "<eval_with_key>.3", "exec")
    namespace: dict[str, object] = {}
    exec(installed, namespace)
    exec(generated, namespace)
    f, g = namespace["f"], namespace["g"]
    assert made_inside([f, g, [1]], root) == "pkg/mod.py:1"
    assert made_inside([g, [1]], root) is None
    assert made_inside([f, test_made_inside_needs_every_code_member_installed], root) is None
