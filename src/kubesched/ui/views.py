"""The pages that follow every pod (the pods list, a pod's history, the timeline), added to the app
by :func:`add_views` in one call: their routes live in routers of their own (:mod:`kubesched.ui.pods`,
:mod:`kubesched.ui.timeline`). What they read (the run's pod index and timeline) is made with each
run, as part of its :class:`~kubesched.ui.state.Snapshot`, so no request waits for it."""

from __future__ import annotations

from fastapi import FastAPI

from kubesched.ui.pods import Page, pods_router
from kubesched.ui.state import UiState
from kubesched.ui.timeline import timeline_router


def add_views(app: FastAPI, state: UiState, page: Page) -> None:
    """Add the pods list, a pod's history, the timeline and their APIs to ``app``."""
    app.include_router(pods_router(state, page))
    app.include_router(timeline_router(state, page))
