"""The timeline's routes, rendered on the server (no script needed): the chart of the pods pending,
running and terminating over the run (preemptions marked, each mark a link to that moment), the
counts at a chosen moment, and every event of the run a page at a time, filtered by text (pod, node,
reason, preemptor) or reason, each pod and node a link.

What they show is the :class:`~kubesched.ui.runtimeline.RunTimeline` of the snapshot the request
found (made with its run, swapped in with it after an edit): a page never waits for a job and never
mixes two runs. ``/api/timeline/events`` answers the same pages as JSON; ``/api/timeline`` (in
``app.py``) still answers every event at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup

from kubesched.ui.runtimeline import EVENTS_PAGE, MAX_EVENTS_PAGE
from kubesched.ui.state import UiState

Page = Callable[..., HTMLResponse]


def after_the_end(at: float, end: float) -> str:
    return f"t={at:g}s is after the end of the run (t={end:g}s)"


def timeline_router(state: UiState, page: Page) -> APIRouter:
    router = APIRouter()

    @router.get("/api/timeline/events", summary="A page of the run's events (all of them, in time order), "
                                                "filtered by text or reason, from an offset or a moment")
    def api_events(q: str = Query("", max_length=320, description="part of the pod, node, reason or preemptor"),
                   reason: str = Query("", max_length=100), at: float | None = Query(None, ge=0),
                   offset: int | None = Query(None, ge=0),
                   limit: int = Query(EVENTS_PAGE, ge=1, le=MAX_EVENTS_PAGE)) -> dict[str, Any]:
        run = state.snapshot.timeline
        if at is not None and at > run.end:
            raise HTTPException(400, detail=after_the_end(at, run.end))
        return run.page(q=q, reason=reason, at=at, offset=offset, limit=limit)

    @router.get("/timeline", response_class=HTMLResponse, include_in_schema=False)
    def timeline_page(request: Request, q: str = Query("", max_length=320), reason: str = Query("", max_length=100),
                      at: float | None = Query(None, ge=0), offset: int | None = Query(None, ge=0),
                      limit: int = Query(EVENTS_PAGE, ge=1, le=MAX_EVENTS_PAGE)) -> HTMLResponse:
        snap = state.snapshot  # one run throughout the page
        run = snap.timeline
        if at is not None and at > run.end:
            return page(request, "error.html", 400, snap=snap, message=after_the_end(at, run.end))
        found = run.page(q=q, reason=reason, at=at, offset=offset, limit=limit)
        return page(request, "timeline.html", snap=snap, found=found, chart=Markup(run.chart), end=run.end, q=q,
                    reason=reason, at=at, reasons=run.reasons)

    return router
