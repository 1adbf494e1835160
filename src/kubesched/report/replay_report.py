"""The HTML report of ``kubesched replay --report``: a ReplayResult document (docs/replay.md) as a
self-contained page, with the page layout, tables and SVG charts the other reports use.

Sections: what was replayed and how the history was read; the agreement with the recording; time
to bind by PriorityClass (a table and a chart, recorded beside replayed); pending pods over time,
recorded and replayed; and the per-pod table, the pods whose outcome differs first, cut at
:data:`POD_ROWS` rows for a long history (``-o json`` has every pod).

The pending curves are made of the per-pod rows: a pod is pending from its creation to its binding,
or, never bound, to its deletion, eviction or preemption (the recorded ones for the recording; for
the replay the replay's, and the recorded deletion and eviction, which the replay plays as steps),
or the window's end.
"""

from __future__ import annotations

from html import escape
from typing import Any

from kubesched.report.html import page, table
from kubesched.report.svg import bar_chart, step_chart

#: per-pod rows the report shows at most (differing pods first)
POD_ROWS = 500


def differs(row: dict[str, Any]) -> bool:
    """A pod whose replayed outcome is not the recorded one: bound in one and not the other,
    preempted in one and not the other, or bound on another node (where the recording names it)."""
    rec, rep = row["recorded"], row["replay"]
    if (rec["bound"] is None) != (rep["bound"] is None) or (rec["preempted"] is None) != (rep["preempted"] is None):
        return True
    return bool(rec["node"] and rep["node"] and rec["node"] != rep["node"])


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def rate_text(rate: dict[str, Any]) -> str:
    """An agreement rate as the table and the report show it: "87.5% (7 of 8)"."""
    if not rate["of"]:
        return "- (nothing to compare)"
    return f"{rate['rate']:.1%} ({rate['agree']} of {rate['of']})"


def _ended(side: dict[str, Any]) -> str:
    parts = []
    for what in ("preempted", "evicted", "deleted"):
        if side.get(what) is not None:
            parts.append(f"{what} at {side[what]:g}s")
            if what == "preempted":
                break  # a preemption is the scheduler's deletion: not said twice
    if side.get("rejected"):
        parts.append("rejected")
    return ", ".join(parts)


def _pending_end(row: dict[str, Any], side: str, until: float) -> float:
    rec, own = row["recorded"], row[side]
    if own["bound"] is not None:
        return float(own["bound"])
    ends = [own.get("preempted"), own.get("evicted"), rec.get("evicted"), until]
    if side == "recorded" or rec.get("preempted") is None:
        ends.append(rec.get("deleted"))  # a deletion by a user is a step of the replay too
    return float(min(t for t in ends if t is not None))


def pending_over_time(pods: list[dict[str, Any]], side: str, until: float) -> list[tuple[float, float]]:
    """How many of the compared pods are pending (created, not yet bound nor gone) after each change."""
    changes: dict[float, int] = {}
    for row in pods:
        start, end = float(row["created"]), _pending_end(row, side, until)
        if end <= start:
            continue
        changes[start] = changes.get(start, 0) + 1
        changes[end] = changes.get(end, 0) - 1
    points: list[tuple[float, float]] = [(0.0, 0.0)]
    count = 0
    for at in sorted(changes):
        count += changes[at]
        if points[-1][0] == at:
            points[-1] = (at, float(count))
        elif points[-1][1] != count:
            points.append((at, float(count)))
    return points


def _by_class(doc: dict[str, Any]) -> list[str]:
    summary = doc["summary"]
    rows = [*doc["byClass"], {"priorityClass": "all", "pods": summary["pods"], "recorded": summary["recorded"],
                              "replay": summary["replay"]}]
    cells = []
    for row in rows:
        rec, rep = row["recorded"], row["replay"]
        cells.append([row["priorityClass"], row["pods"], f"{rec['bound']} → {rep['bound']}",
                      f"{rec['notBound']} → {rep['notBound']}",
                      *(f"{_seconds(rec['waited'][q])} → {_seconds(rep['waited'][q])}"
                        for q in ("mean", "p50", "p95", "max")),
                      f"{rec['preempted']} → {rep['preempted']}", f"{rec['evicted']} → {rep['evicted']}"])
    classes = [row["priorityClass"] for row in doc["byClass"]]
    series = {f"{side} {q}": [float(row[key]["waited"][q] or 0.0) for row in doc["byClass"]]
              for side, key in (("recorded", "recorded"), ("replay", "replay")) for q in ("p50", "p95")}
    return ["<h2>Time to bind by PriorityClass (recorded → replay)</h2>",
            table(["PriorityClass", "pods", "bound", "not bound", "mean (s)", "p50 (s)", "p95 (s)", "max (s)",
                   "preempted", "evicted"], cells),
            bar_chart("Time to bind by PriorityClass", classes, series, y_label="seconds") if classes else ""]


def _pod_table(pods: list[dict[str, Any]]) -> list[str]:
    ordered = [r for r in pods if differs(r)] + [r for r in pods if not differs(r)]
    different = sum(1 for r in pods if differs(r))
    shown = ordered[:POD_ROWS]
    note = (f"<p>{different} of {len(pods)} pod(s) differ from the recording; they come first."
            + (f" The first {POD_ROWS} rows are shown: <code>-o json</code> has every pod." if len(pods) > POD_ROWS
               else "") + "</p>")
    rows = [[r["pod"], r["priorityClass"], f"{r['created']:g}",
             r["recorded"]["node"] or ("bound" if r["recorded"]["bound"] is not None else "not bound"),
             _seconds(r["recorded"]["waited"]), _ended(r["recorded"]),
             r["replay"]["node"] or ("bound" if r["replay"]["bound"] is not None else "not bound"),
             _seconds(r["replay"]["waited"]), _ended(r["replay"]), "differs" if differs(r) else ""]
            for r in shown]
    return ["<h2>Pods</h2>", note,
            table(["pod", "PriorityClass", "created (s)", "recorded node", "recorded time to bind (s)",
                   "recorded end", "replayed node", "replayed time to bind (s)", "replayed end", ""], rows)]


def replay_report(doc: dict[str, Any]) -> str:
    """The self-contained HTML page of a ReplayResult document."""
    history, summary = doc["history"], doc["summary"]
    changes = "; ".join(doc["changes"]) or "the default scheduler configuration"
    read = [[what, n] for what, n in history["counts"].items()]
    read += [[f"skipped: {reason}", n] for reason, n in history["skipped"].items()]
    read += [[f"not replayed: writes to {resource}", n] for resource, n in history["unknownResources"].items()]
    agreement = summary["agreement"]
    until = float(doc["until"])
    sections = [
        f"<p>{escape(history['source'])} ({escape(history['format'])}) from {escape(doc['start'])}, "
        f"{until:g}s, with {escape(changes)} &middot; seed {doc['seed']}</p>",
        "<h2>Agreement with the recording</h2>",
        table(["", "agreement"], [["bound or not by the end", rate_text(agreement["bound"])],
                                  ["same node (bound in both)", rate_text(agreement["node"])],
                                  ["same node pool", rate_text(agreement["pool"])]]),
        *_by_class(doc),
        step_chart("Pending pods over time", {
            "recorded": pending_over_time(doc["pods"], "recorded", until),
            "replay": pending_over_time(doc["pods"], "replay", until)},
            x_label="seconds from the window's start", y_label="pods", x_end=until, integer=True,
            emphasise_first=True),
        *_pod_table(doc["pods"]),
        "<h2>What was read</h2>", table(["", "count"], read),
        *(f"<p class='muted'>note: {escape(n)}</p>" for n in history["notes"]),
    ]
    return page(f"Replay: {history['source']}", sections)
