"""The timeline, rendered on the server (no script needed): the pods pending, running and terminating
over the run as a chart (inline SVG, drawn by the HTML report's step chart, preemptions marked, each
mark a link to that moment), the counts at a chosen moment, and every event of the run a page at a
time, filtered by text (pod, node, reason, preemptor) or reason, each pod and node a link.

``/api/timeline/events`` answers the same pages as JSON; ``/api/timeline`` (in ``app.py``) still
answers every event at once.
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup

from kubesched.report.svg import step_chart
from kubesched.sim.series import pod_counts_over_time
from kubesched.ui.pods import Page
from kubesched.ui.state import UiState

#: events on a page, and the most one request may ask for
EVENTS_PAGE = 200
MAX_EVENTS_PAGE = 2000
SERIES = ("pending", "running", "terminating")


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
    series: dict[str, list[tuple[float, float]]]
    end: float
    chart: str

    @classmethod
    def of(cls, result: dict[str, Any]) -> RunTimeline:
        events = result["events"]
        texts = [" ".join((e["pod"], e.get("node") or "", e["reason"], e.get("preemptor") or "")).lower()
                 for e in events]
        series = pod_counts_over_time(events, terminating=True)
        end = float(result["endTime"])
        preempted = Counter(e["time"] for e in events if e["reason"] == "Preempted")
        marks = [(t, f"{n} pod{'' if n == 1 else 's'} preempted at t={t:g}s", f"/timeline?reason=Preempted&at={t:g}")
                 for t, n in sorted(preempted.items())]
        chart = step_chart(f"Pods over time ({sum(preempted.values())} preempted, marked)",
                           {name: series[name] for name in SERIES}, x_label="simulated seconds", y_label="pods",
                           x_end=end, integer=True, marks=marks)
        return cls(events, texts, series, end, chart)

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


class TimelineViews:
    """The run's timeline, made when first asked for and again after an edit (a new run)."""

    def __init__(self, state: UiState) -> None:
        self.state = state
        self._made: tuple[Any, RunTimeline] | None = None
        self._lock = threading.Lock()

    def timeline(self) -> RunTimeline:
        with self._lock:
            outcome = self.state.outcome
            if self._made is None or self._made[0] is not outcome:
                self._made = (outcome, RunTimeline.of(outcome.result))
            return self._made[1]


def timeline_router(views: TimelineViews, page: Page) -> APIRouter:
    router = APIRouter()

    def reasons() -> list[str]:
        return sorted({e["reason"] for e in views.timeline().events})

    @router.get("/api/timeline/events", summary="A page of the run's events (all of them, in time order), "
                                                "filtered by text or reason, from an offset or a moment")
    def api_events(q: str = Query("", max_length=320, description="part of the pod, node, reason or preemptor"),
                   reason: str = Query("", max_length=100), at: float | None = Query(None, ge=0),
                   offset: int | None = Query(None, ge=0),
                   limit: int = Query(EVENTS_PAGE, ge=1, le=MAX_EVENTS_PAGE)) -> dict[str, Any]:
        return views.timeline().page(q=q, reason=reason, at=at, offset=offset, limit=limit)

    @router.get("/timeline", response_class=HTMLResponse, include_in_schema=False)
    def timeline_page(request: Request, q: str = Query("", max_length=320), reason: str = Query("", max_length=100),
                      at: float | None = Query(None, ge=0), offset: int | None = Query(None, ge=0),
                      limit: int = Query(EVENTS_PAGE, ge=1, le=MAX_EVENTS_PAGE)) -> HTMLResponse:
        run = views.timeline()
        if at is not None and at > run.end:
            return page(request, "error.html", 400, message=f"t={at:g}s is after the end of the run (t={run.end:g}s)")
        found = run.page(q=q, reason=reason, at=at, offset=offset, limit=limit)
        return page(request, "timeline.html", found=found, chart=Markup(run.chart), end=run.end, q=q, reason=reason,
                    at=at, reasons=reasons())

    return router
