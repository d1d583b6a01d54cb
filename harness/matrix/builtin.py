"""Where the built-in cases and the default matrix are: ``cases/`` and ``matrix.toml`` of a checkout, installed as
``harness.cases`` (with ``harness/cases/matrix.toml``). Stdlib only: the CLI and the pytest options read it."""

from __future__ import annotations

import importlib.util
import pkgutil
from functools import cache
from importlib import resources
from pathlib import Path

MATRIX_FILE = "matrix.toml"
PACKAGED = "the packaged default (no ./matrix.toml here)"


@cache
def package() -> str:
    """The built-in cases' package: ``cases`` when it is the checkout's beside this ``harness`` (run from a
    clone, as today's records name them), else the installed ``harness.cases``."""
    checkout = Path(__file__).resolve().parents[2]
    try:
        spec = importlib.util.find_spec("cases")
    except ValueError:  # a module named cases without a spec
        spec = None
    if spec is not None and spec.origin and Path(spec.origin).resolve().parent == checkout / "cases":
        return "cases"
    return "harness.cases"


@cache
def case_ids() -> frozenset[str]:
    """The ids of the built-in cases (one module each, named after its case)."""
    folder = resources.files(package())
    return frozenset(module.name for module in pkgutil.iter_modules([str(folder)]) if not module.name.startswith("_"))


def case_module(entry: str) -> str:
    """The module an entry of ``cases`` (or ``--cases``) names: a built-in id's module, else the entry itself
    (``mykernels``, ``mypkg.kernels``: a user's module, imported from the working directory or sys.path)."""
    return f"{package()}.{entry}" if entry in case_ids() else entry


def matrix_file(given: str | Path | None) -> tuple[Path, str]:
    """The matrix file a run uses and where it came from: ``given`` (--matrix), else ./matrix.toml when there
    is one, else the default matrix installed with the built-in cases (an absolute path)."""
    if given is not None:
        return Path(given), "--matrix"
    if Path(MATRIX_FILE).is_file():
        return Path(MATRIX_FILE), f"./{MATRIX_FILE}"
    return Path(str(resources.files(package()) / MATRIX_FILE)), PACKAGED
