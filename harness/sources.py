"""Where a module's source is, and whether a file is the user's own code or an installed library's (site-packages,
the standard library, a ``pip install --target`` folder): what cell keys and repro scripts both read."""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import sys
import sysconfig
from pathlib import Path


def module_file(name: str) -> Path | None:
    """The source file of module ``name`` on this ``sys.path``, or None (not found, not a file, or it fails to be
    looked up)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    origin = Path(spec.origin) if spec is not None and spec.origin else None
    return origin if origin is not None and origin.is_file() else None


def installed_file(file: Path) -> bool:
    """A file of an installed package or of the standard library: under site-packages (or dist-packages) or the
    interpreter's own folders, or in a folder on the path beside the metadata of the distribution that provides its
    top-level package (``pip install --target DIR``: a library, not the user's code; walked as the user's, Liger's
    modules brought transformers' import into every cell key, 12-16 s with every worker idle on one H200)."""
    folders = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    if {"site-packages", "dist-packages"} & set(file.parts) or any(file.is_relative_to(f) for f in folders):
        return True
    for entry in sys.path:
        folder = Path(entry or ".").absolute()
        if file.is_relative_to(folder) and file != folder:
            top = file.relative_to(folder).parts[0].removesuffix(".py")
            if top in _distributed_tops(str(folder)):
                return True
    return False


@functools.cache
def _distributed_tops(folder: str) -> frozenset[str]:
    """The top-level packages and modules that the distributions installed into ``folder`` (its ``*.dist-info``)
    provide, by their record of files, else their ``top_level.txt``. Not a ``*.egg-info``: ``pip install .`` (and
    ``setup.py develop``) leaves one in the checkout it built, whose folder on the path is then the user's code, not
    a library keyed by its version (a kernel edited there kept its old verdicts under ``--reuse``)."""
    tops: set[str] = set()
    for info in sorted(Path(folder).glob("*.dist-info")):
        dist = importlib.metadata.PathDistribution(info)
        listed = [Path(str(one)).parts for one in dist.files or []]
        tops |= {parts[0].removesuffix(".py") for parts in listed if parts and parts[0] != ".."}
        tops |= set((dist.read_text("top_level.txt") or "").split())
    return frozenset(top for top in tops if not top.endswith((".dist-info", ".egg-info")) and top != "__pycache__")
