"""The build backend: setuptools' own, with its build/ folder and *.egg-info in a temporary folder, so that
building a wheel or an sdist from a checkout (``pip wheel .``, ``pip install .``, with or without build isolation)
or an editable install leaves the checkout as it was."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from setuptools import build_meta


@contextmanager
def _outside() -> Iterator[None]:
    """setuptools' build and egg_info folders in a temporary folder: a config file that distutils reads last
    (``DIST_EXTRA_CONFIG``), over any setup.cfg."""
    before = os.environ.get("DIST_EXTRA_CONFIG")
    with tempfile.TemporaryDirectory(prefix="triton-torch-matrix-build-") as folder:
        config = Path(folder, "outside.cfg")
        config.write_text(f"[build]\nbuild_base = {Path(folder, 'build')}\n[egg_info]\negg_base = {folder}\n")
        os.environ["DIST_EXTRA_CONFIG"] = str(config)
        try:
            yield
        finally:
            if before is None:
                del os.environ["DIST_EXTRA_CONFIG"]
            else:
                os.environ["DIST_EXTRA_CONFIG"] = before


def _outside_of(hook: Callable[..., str]) -> Callable[..., str]:
    def build(*args: Any, **kwargs: Any) -> str:
        with _outside():
            return hook(*args, **kwargs)

    build.__doc__ = hook.__doc__
    return build


# The PEP 517 and 660 hooks (get_requires_for_build_* run setuptools' egg_info, which writes *.egg-info too).
build_editable = _outside_of(build_meta.build_editable)
build_sdist = _outside_of(build_meta.build_sdist)
build_wheel = _outside_of(build_meta.build_wheel)
get_requires_for_build_editable = _outside_of(build_meta.get_requires_for_build_editable)
get_requires_for_build_sdist = _outside_of(build_meta.get_requires_for_build_sdist)
get_requires_for_build_wheel = _outside_of(build_meta.get_requires_for_build_wheel)
prepare_metadata_for_build_editable = _outside_of(build_meta.prepare_metadata_for_build_editable)
prepare_metadata_for_build_wheel = _outside_of(build_meta.prepare_metadata_for_build_wheel)
