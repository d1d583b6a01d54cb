"""Whether a run broke: it measured nothing for some cells because the harness itself failed (their cell
processes could not start, or no cell of a device's paths could even be built). Such a run exits
``EXIT_RUN_BROKE`` and its chart says so at the top."""

from __future__ import annotations

from typing import Any

from harness.report.marks import first_sentence

NOT_STARTED = "CellProcessFailed"  # the error type of a cell whose cell process did not start


def run_broke(data: dict[str, Any]) -> str | None:
    """One line saying why the run of ``data`` (a results file) broke, or None when it did not."""
    cells = [cell for cell in data["cells"] if not cell.get("reused_from")]
    failed = [cell for cell in cells if cell.get("error_type") == NOT_STARTED]
    if failed:
        first = first_sentence(failed[0].get("error") or "")
        return f"{len(failed)} of {len(cells)} cell(s) measured nothing: their cell processes failed to start ({first})"
    paths = data["environment"].get("paths")
    devices: dict[str, list[dict[str, Any]]] = {}
    for cell in cells:
        entry = paths.get(cell["path"]) if isinstance(paths, dict) else None
        if isinstance(entry, dict) and entry.get("device") and cell["status"] != "skip":
            devices.setdefault(entry["device"], []).append(cell)
    for device, ran in devices.items():
        if all(cell["status"] == "error" and cell.get("stage") == "build" for cell in ran):
            first = first_sentence(ran[0].get("error") or "")
            return f"no cell of the {device} paths could be built ({len(ran)} error at build; first: {first})"
    return None
