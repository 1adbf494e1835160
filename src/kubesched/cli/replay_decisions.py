"""``kubesched replay --follow-recorded``'s table: the recorded decisions checked one by one."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from kubesched.cli.tables import Table
from kubesched.report.replay_report import rate_text

#: rows of the table of decisions that differ (``-o json`` has every decision)
DIFFERING_ROWS = 30


def best_text(row: dict[str, Any]) -> str:
    """What the scheduler would decide, in words: its best node(s) and score."""
    best = ", ".join(row.get("best") or []) or "-"
    more = row.get("bestCount", 0) - len(row.get("best") or [])
    text = best + (f" and {more} more" if more > 0 else "")
    if row.get("bestScore") is not None:
        text += f" (score {row['bestScore']})"
    return text


def render_decisions(console: Console, doc: dict[str, Any]) -> None:
    history = doc["history"]
    changes = "; ".join(doc["changes"]) or "the default scheduler configuration"
    console.print(f"[bold]Replay following the recording[/] {escape(history['source'])} from {escape(doc['start'])}, "
                  f"{doc['until']:g}s: each recorded decision asked of {escape(changes)}")
    summary = doc["decisions"]["summary"]
    table = Table(title=f"Recorded decisions ({summary['decisions']})", title_justify="left")
    for col in ("decision", "decisions", "same", "tie", "differs", "not pending", "agreement (ties excluded)",
                "same or tie"):
        table.add_column(col)
    for kind, part in [*summary["byKind"].items(), ("all", summary)]:
        table.add_row(kind, str(part["decisions"]), str(part["same"]), str(part["tie"]), str(part["differs"]),
                      str(part["missing"]), rate_text(part["agreement"]), rate_text(part["sameOrTie"]))
    console.print(table)
    rows = [r for r in doc["decisions"]["rows"] if r["verdict"] in ("differs", "missing")]
    if not rows:
        console.print("The scheduler under test would have decided every recorded decision as recorded "
                      "(or among equally good nodes, the recorded one included).")
        return
    shown = f"; the first {DIFFERING_ROWS}, -o json has all" if len(rows) > DIFFERING_ROWS else ""
    differing = Table(title=f"Decisions that differ ({len(rows)}{shown})", title_justify="left")
    for col in ("time", "pod", "decision", "recorded", "would decide", "why"):
        differing.add_column(col, overflow="fold")
    for row in rows[:DIFFERING_ROWS]:
        differing.add_row(f"{row['time']:g}s", row["pod"], row["kind"], row["recorded"] or "-", best_text(row),
                          row.get("why", ""))
    console.print(differing)
