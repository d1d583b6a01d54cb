"""The harness's pytest plugin, for both the matrix (``pytest matrix.toml``) and the harness's own tests, in a
checkout that is not installed. Installed (``pip install -e .``), the ``pytest11`` entry point (or ``python -m harness
run``'s ``-p``) has loaded it before this file is read, and declaring it again here would break a run from another
folder: its matrix, the packaged one, resolves into this checkout, so pytest reads this conftest.py late, where a
``pytest_plugins`` is an error ("Defining 'pytest_plugins' in a non-top-level conftest")."""

import sys

if "harness.plugin" not in sys.modules:
    pytest_plugins = ("harness.plugin",)
