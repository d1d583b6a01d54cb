"""The one status table (harness/spec.py ``STATUS_TABLE``) and every view of it: the same values each place had
when it kept its own list."""

from harness.plugin.collect import STATUS_LETTERS
from harness.plugin.processes import suspect
from harness.records.reuse import REUSABLE
from harness.report.marks import SYMBOLS
from harness.spec import FAILURES, SEVERITY, STATUS_TABLE, Status


def test_one_status_table_gives_every_view_of_the_statuses():
    """Failures, --reuse, the order of a flaky cell's attempts, pytest's letters, the chart's marks and the
    re-run rule all read harness/spec.py's STATUS_TABLE, and say what they said before it."""
    assert list(STATUS_TABLE) == list(Status)
    assert FAILURES == ("wrong", "blind", "error", "crash", "timeout")
    assert REUSABLE == ("pass", "graph_break", "blind", "error", "skip")
    assert SEVERITY == ("wrong", "blind", "crash", "timeout", "error", "graph_break", "skip")
    letters = {"graph_break": "G", "wrong": "W", "blind": "B", "error": "E", "crash": "C", "timeout": "T"}
    assert STATUS_LETTERS == letters
    assert SYMBOLS == {
        **{"pass": "✅", "graph_break": "✂️", "wrong": "❗WRONG", "blind": "🔇"},
        **{"error": "❌", "crash": "💥", "timeout": "⏱️", "skip": "➖"},
    }
    rerun = {status: [suspect(status, expected) for expected in (None, "pass", status)] for status in Status}
    assert rerun == {
        status: [status == "wrong", status not in ("pass", "skip"), status == "wrong"] for status in Status
    }
