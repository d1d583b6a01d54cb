"""The chart's first section: how many failures their repro scripts confirmed outside the harness, and the harness
suspects, failures their script did not show (the harness's own scaffolding may cause them); a script stopped with
the run, or out of its path's time, leaves its failure "not confirmed", counted apart and never a suspect."""

from __future__ import annotations

from harness.records.confirmation import is_suspect, not_confirmed
from harness.records.record import Record
from harness.report.marks import escape, shortened, wrap


def confirmed_section(cells: list[Record]) -> list[str]:
    """First of all: the failures whose repro script, run outside the harness, did not show them (the harness's
    own scaffolding may cause them: they count against no style), and how many failures were confirmed."""
    failed = [record for record in cells if record.confirmation]
    suspects = [record for record in failed if is_suspect(record)]
    unconfirmed = [record for record in failed if not_confirmed(record)]
    if not failed:
        return []
    shown = len(failed) - len(suspects) - len(unconfirmed)
    out = [f"**Confirmed outside the harness**: {shown} of {len(failed)} failed cells were reproduced by their "
           "repro script (repros/), run in a fresh process with no harness code."
           + (f" Not confirmed ({len(unconfirmed)}): the script was stopped with the run or ran out of its path's "
              f"timeout: {', '.join(record.id for record in unconfirmed)}." if unconfirmed else ""), ""]
    if suspects:
        out += [f"## ⚠ Harness suspects ({len(suspects)}): failures their repro did not show", ""]
        for record in suspects:
            said = shortened(str(record.confirmation.get("line", "")))  # type: ignore[union-attr]
            script = record.confirmation.get("script")  # type: ignore[union-attr]
            recorded = escape(shortened(record.summary))
            out += wrap(f"- **{record.id}**: recorded {recorded}; `{script}` said: {escape(said)}")
        out.append("")
    return out
