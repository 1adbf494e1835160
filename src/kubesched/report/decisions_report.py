"""The HTML report of ``kubesched replay --follow-recorded --report``: the recorded decisions checked
one by one (docs/replay.md) as a self-contained page: what was replayed, the verdicts per kind of
decision (a table and a chart), the decisions that differ (at most :data:`DECISION_ROWS`), and
what was read."""

from __future__ import annotations

from html import escape
from typing import Any

from kubesched.report.html import page, table
from kubesched.report.replay_report import rate_text
from kubesched.report.svg import bar_chart

#: rows of decisions that differ the page shows at most (``-o json`` has every decision)
DECISION_ROWS = 500
VERDICTS = ("same", "tie", "differs", "missing")


def decisions_report(doc: dict[str, Any]) -> str:
    """The self-contained HTML page of a ReplayResult document of mode ``followRecorded``."""
    history, decisions = doc["history"], doc["decisions"]
    summary = decisions["summary"]
    changes = "; ".join(doc["changes"]) or "the default scheduler configuration"
    kinds = [*summary["byKind"].items(), ("all", summary)]
    verdicts = table(["decision", "decisions", "same", "tie", "differs", "not pending", "agreement (ties excluded)",
                      "same or tie"],
                     [[kind, part["decisions"], *(part[v] for v in VERDICTS), rate_text(part["agreement"]),
                       rate_text(part["sameOrTie"])] for kind, part in kinds])
    chart = bar_chart("Recorded decisions by verdict", [k for k, _ in kinds],
                      {v: [float(part[v]) for _, part in kinds] for v in VERDICTS}, y_label="decisions",
                      integer=True) if summary["decisions"] else ""
    different = [r for r in decisions["rows"] if r["verdict"] in ("differs", "missing")]
    note = (f"<p>{len(different)} of {summary['decisions']} decision(s) differ."
            + (f" The first {DECISION_ROWS} are shown: <code>-o json</code> has every decision."
               if len(different) > DECISION_ROWS else "") + "</p>")
    rows = [[f"{r['time']:g}", r["pod"], r["kind"], r["recorded"] or "-", ", ".join(r.get("best") or []) or "-",
             r.get("bestCount", 0), r["verdict"], r.get("why", "")] for r in different[:DECISION_ROWS]]
    read = [[what, n] for what, n in history["counts"].items()]
    read += [[f"skipped: {reason}", n] for reason, n in history["skipped"].items()]
    read += [[f"not applied: {what}", n] for what, n in doc["run"]["notApplied"].items()]
    sections = [
        f"<p>{escape(history['source'])} ({escape(history['format'])}) from {escape(doc['start'])}, "
        f"{float(doc['until']):g}s: the replay's cluster follows the recording, and each recorded decision is "
        f"asked of {escape(changes)}</p>",
        "<h2>Recorded decisions</h2>", verdicts, chart,
        "<h2>Decisions that differ</h2>", note,
        table(["time (s)", "pod", "decision", "recorded node", "would decide", "equally best", "verdict", "why"], rows),
        "<h2>What was read</h2>", table(["", "count"], read),
        *(f"<p class='muted'>note: {escape(n)}</p>" for n in history["notes"]),
    ]
    return page(f"Replay following the recording: {history['source']}", sections)
