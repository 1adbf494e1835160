"""The pages that follow every pod (the pods list, a pod's preemptions and history, the timeline),
added to the app by :func:`add_views` in one call: their routes live in routers of their own
(:mod:`kubesched.ui.pods`, :mod:`kubesched.ui.timeline`)."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.templating import Jinja2Templates

from kubesched.ui.pods import Page, PodViews, pods_router
from kubesched.ui.state import UiState
from kubesched.ui.timeline import TimelineViews, timeline_router


def add_views(app: FastAPI, templates: Jinja2Templates, state: UiState, page: Page) -> PodViews:
    """Add the pods list, the timeline and their APIs to ``app``; a pod's page (``pod.html``) gets
    ``preemptions_of(key)``. The :class:`PodViews` returned renders the page of a pod gone at the end."""
    pods, timeline = PodViews(state), TimelineViews(state)
    # made now, with the run, rather than on the first request: on a big cluster the objects they
    # add wake the garbage collector over the whole run's heap, seconds a user would wait for a page
    pods.index()
    timeline.timeline()
    templates.env.globals["preemptions_of"] = pods.preemptions
    app.include_router(pods_router(pods, page))
    app.include_router(timeline_router(timeline, page))
    return pods
