"""Reading a run's results: its results.json, or its records.jsonl when that is newer (the run was killed before
it wrote results.json)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.errors import InputError, input_text
from harness.records.log import LOG_NAME, read_log
from harness.records.results import Results, load
from harness.records.upgrade import Catalogue, NoCatalogue

RESULTS_NAME = "results.json"  # what a run writes beside its records.jsonl


def read_results(file: Path | str, catalogue: Catalogue | None = None) -> Results:
    """Load and check a results file (a run's own ``results.json``: its records.jsonl beside it when that is newer,
    or there alone; a file named otherwise is read as named, whatever lies beside it: a baseline copied next to a
    later run's log is the baseline); ``InputError`` names the file and the key that is wrong. ``catalogue``: what
    the reader knows of styles and paths an older file does not describe (harness/matrix/catalogue.py; default:
    nothing)."""
    file = Path(file)
    log = file.with_name(LOG_NAME)
    if file.suffix == ".jsonl":
        return read_log(file)
    if file.name == RESULTS_NAME and log.exists() and (not file.exists() or log.stat().st_mtime > file.stat().st_mtime):
        return read_log(log)
    try:
        data = json.loads(input_text(file))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(file, "(json)", f"not valid JSON ({error})") from None
    except RecursionError:
        raise InputError(file, "(json)", "nested too deep to read") from None
    return load(data, file, catalogue or NoCatalogue())
