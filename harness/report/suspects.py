"""The chart's first section: how many failures their repro scripts confirmed outside the harness, and the harness
suspects, failures their script did not show (the harness's own scaffolding may cause them)."""

from __future__ import annotations

from harness.records.confirmation import is_suspect
from harness.records.record import Record
from harness.report.marks import escape, shortened, wrap


def confirmed_section(cells: list[Record]) -> list[str]:
    """First of all: the failures whose repro script, run outside the harness, did not show them (the harness's
    own scaffolding may cause them: they count against no style), and how many failures were confirmed."""
    failed = [record for record in cells if record.confirmation]
    suspects = [record for record in failed if is_suspect(record)]
    if not failed:
        return []
    out = [f"**Confirmed outside the harness**: {len(failed) - len(suspects)} of {len(failed)} failed cells were "
           "reproduced by their repro script (repros/), run in a fresh Python with no harness code.", ""]
    if suspects:
        out += [f"## ⚠ Harness suspects ({len(suspects)}): failures their repro did not show", ""]
        for record in suspects:
            said = shortened(str(record.confirmation.get("line", "")))  # type: ignore[union-attr]
            script = record.confirmation.get("script")  # type: ignore[union-attr]
            recorded = escape(shortened(record.summary))
            out += wrap(f"- **{record.id}**: recorded {recorded}; `{script}` said: {escape(said)}")
        out.append("")
    return out
