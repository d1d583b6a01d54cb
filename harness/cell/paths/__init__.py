"""Paths: the ways a model reaches the GPU (or CPU), each a function that runs a cell and compares it.

One module per chart group, each declaring ``GROUP``; a path is one function registered with ``@path`` there.
Importing this package registers every path: ``PATHS`` (id -> function) and ``PATH_GROUPS`` (id -> group).
"""

from harness.cell.paths import compilation, export, subsystems, training  # noqa: F401  (importing registers them)
from harness.cell.paths.common import PATH_GROUPS, PATHS, PathRunner, path

__all__ = ["PATHS", "PATH_GROUPS", "PathRunner", "path"]
