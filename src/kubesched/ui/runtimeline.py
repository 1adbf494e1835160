"""One run's timeline, worked out once with the run (a :class:`RunTimeline` is part of the ui's
:class:`~kubesched.ui.state.Snapshot`): every event with what the timeline page filters it by, the
pods pending, running and terminating over time, and the chart of them (inline SVG, drawn by the HTML
report's step chart, preemptions marked, each mark a link to that moment). A page of it is then a
filter of the events and a bisection of the series, with no simulation.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass
from typing import Any

from kubesched.report.svg import step_chart
from kubesched.sim.series import pod_counts_over_time

#: events on a page, and the most one request may ask for
EVENTS_PAGE = 200
MAX_EVENTS_PAGE = 2000
SERIES = ("pending", "running", "terminating")


def moment_text(t: float) -> str:
    """A simulated moment as a link's ``at=`` writes it: exactly (``%g`` keeps six digits, so that
    t=1234567.5 would come back as 1234570, another moment, maybe after the run's end), and without
    a trailing ``.0`` (``35``, ``0.25``, ``1234567.5``)."""
    text = repr(float(t))
    return text[:-2] if text.endswith(".0") else text


def value_at(points: list[tuple[float, float]], t: float) -> float:
    """A step series' value at ``t``: that of its last point at or before ``t`` (0 before the first)."""
    i = bisect.bisect_right([x for x, _ in points], t)
    return points[i - 1][1] if i else 0


@dataclass
class RunTimeline:
    """One run's events with what a page filters them by, its counts over time and its chart."""

    events: list[dict[str, Any]]
    #: each event's pod, node, reason and preemptor, lower case: what the text filter reads
    texts: list[str]
    #: the pods pending, running and terminating over time (``pod_counts_over_time``), by name
    series: dict[str, list[tuple[float, float]]]
    end: float
    chart: str
    #: the reasons the events have, sorted (the page's reason filter offers them)
    reasons: list[str]

    @classmethod
    def of(cls, result: dict[str, Any]) -> RunTimeline:
        events = result["events"]
        texts = [" ".join((e["pod"], e.get("node") or "", e["reason"], e.get("preemptor") or "")).lower()
                 for e in events]
        series = pod_counts_over_time(events, terminating=True)
        end = float(result["endTime"])
        preempted = Counter(e["time"] for e in events if e["reason"] == "Preempted")
        marks = [(t, f"{n} pod{'' if n == 1 else 's'} preempted at t={t:g}s", f"/timeline?reason=Preempted&at={moment_text(t)}")
                 for t, n in sorted(preempted.items())]
        chart = step_chart(f"Pods over time ({sum(preempted.values())} preempted, marked)",
                           {name: series[name] for name in SERIES}, x_label="simulated seconds", y_label="pods",
                           x_end=end, integer=True, marks=marks)
        return cls(events, texts, series, end, chart, sorted({e["reason"] for e in events}))

    def page(self, *, q: str = "", reason: str = "", at: float | None = None, offset: int | None = None,
             limit: int = EVENTS_PAGE) -> dict[str, Any]:
        """A page of the events whose pod, node, reason or preemptor contains ``q`` (any case) and
        whose reason is ``reason`` (when given), from ``offset``, or else from the first at or after
        ``at``; with how many pass in all and the pods pending, running and terminating at ``at`` (or
        at the end of the run)."""
        wanted = q.strip().lower()
        chosen = [i for i, text in enumerate(self.texts)
                  if (not wanted or wanted in text) and (not reason or self.events[i]["reason"] == reason)]
        if offset is None:
            offset = bisect.bisect_left([self.events[i]["time"] for i in chosen], at) if at is not None else 0
        moment = self.end if at is None else at
        return {"total": len(chosen), "offset": offset, "limit": limit, "at": moment,
                "counts": {name: value_at(self.series[name], moment) for name in SERIES},
                "events": [{"index": i, **self.events[i]} for i in chosen[offset:offset + limit]]}
