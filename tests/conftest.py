"""Fixtures for the harness's own tests."""

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TOLERANCES = """
[tolerances]
float32 = { atol = 1e-5, rtol = 1e-5 }
float16 = { atol = 1e-3, rtol = 4e-3 }
bfloat16 = { atol = 1e-2, rtol = 1.6e-2 }
"""


def run_harness(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """``python -m harness ARGS`` from the repository root, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def matrix_text(cases: list[str], styles: list[str], paths: dict[str, tuple[str, float]]) -> str:
    lines = [f"cases = {cases!r}".replace("'", '"'), f"styles = {styles!r}".replace("'", '"'), "[paths]"]
    lines += [f'{name} = {{ device = "{device}", timeout = {timeout} }}' for name, (device, timeout) in paths.items()]
    return "\n".join(lines) + "\n" + TOLERANCES


@pytest.fixture
def write_matrix(tmp_path: Path) -> Callable[..., Path]:
    """Write a matrix file in tmp_path and return its path."""

    def write(cases: list[str], styles: list[str], paths: dict[str, tuple[str, float]], name: str = "m.toml") -> Path:
        file = tmp_path / name
        file.write_text(matrix_text(cases, styles, paths))
        return file

    return write
