"""A run killed mid-way keeps every finished record; report draws it as incomplete; --resume finishes it."""

from pathlib import Path

from harness.records import files as records
from tests.conftest import harness_main


def read_results(file: Path) -> dict:
    """A results file as JSON, as the reader types and upgrades it."""
    return records.read_results(file).to_data()


def test_resume_rejects_a_corrupt_results_file(write_matrix, tmp_path: Path):
    matrix = write_matrix(["tests.fixtures.good"], ["control"], {"cpu_fallback": ("cpu", 60)})
    (tmp_path / "results.json").write_text('{"schema": 1, "environment": {}, "cells": [')
    done = harness_main("run", "--matrix", str(matrix), "--report-dir", str(tmp_path), "-n", "0", "--resume")
    assert done.returncode == 2
    assert f"{tmp_path / 'results.json'}: (json): not valid JSON" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


