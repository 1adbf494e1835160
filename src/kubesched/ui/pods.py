"""The pods list (``/pods``, ``/api/pods``), a pod's history (``/api/pods/NS/NAME/history``) and the
page of a pod that is gone at the end of the run: routes of their own (an ``APIRouter``).

What they show is the :class:`~kubesched.ui.podindex.PodIndex` of the snapshot the request found
(made with its run, swapped in with it after an edit): a page never waits for a job and never mixes
two runs. The list is filtered, sorted and paged on the server (a plain GET form: no script, and no
token, since it changes nothing); each pod is a link to its page, its node to the node's, its owner
to the list of the owner's pods.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse

from kubesched.ui.podlinks import api_renamed
from kubesched.ui.requests import API_ID
from kubesched.ui.state import Snapshot, UiState

#: a page of the pods list, and the most one request may ask for
PODS_PAGE = 100
MAX_PODS_PAGE = 1000
#: the longest value a filter takes (a namespace/name is at most 63 + 1 + 253)
MAX_FILTER = 320

Page = Callable[..., HTMLResponse]


def gone_page(page: Page, request: Request, snap: Snapshot, key: str, notice: str | None = None) -> HTMLResponse | None:
    """The page of a pod ``snap``'s run had but that is gone at its end (a preempted victim, a
    deleted or finished pod): what the result knows of it (``notice``: what it says of the link that
    led to it, :func:`~kubesched.ui.podlinks.renamed_notice`). None for a pod the run never had."""
    try:
        history = snap.pods.history(key, snap.result)
    except KeyError:
        return None
    return page(request, "pod_gone.html", snap=snap, key=key, h=history, end=snap.result["endTime"],
                notice=notice)


def pods_router(state: UiState, page: Page) -> APIRouter:
    router = APIRouter()

    @router.get("/api/pods", summary="A page of the run's pods, filtered and sorted: phase, node, priority, owner "
                                     "(the controller: a ReplicaSet's pods under their Deployment), created, "
                                     "pending time, who preempted it and how many it preempted")
    def api_pods(namespace: str = Query("", max_length=MAX_FILTER), phase: str = Query("", max_length=MAX_FILTER),
                 node: str = Query("", max_length=MAX_FILTER),
                 priorityClass: str = Query("", max_length=MAX_FILTER),  # noqa: N803 - the query's name
                 owner: str = Query("", max_length=MAX_FILTER, description="the owner's namespace/name"),
                 q: str = Query("", max_length=MAX_FILTER, description="part of the pod's namespace/name"),
                 sort: str = Query("name", max_length=20, description="name, priority, node, pending or created; "
                                                                      "-priority: the other way"),
                 offset: int = Query(0, ge=0), limit: int = Query(PODS_PAGE, ge=1, le=MAX_PODS_PAGE)) -> dict[str, Any]:
        try:
            return state.snapshot.pods.select(namespace=namespace, phase=phase, node=node,
                                              priority_class=priorityClass, owner=owner, q=q, sort=sort,
                                              offset=offset, limit=limit)
        except ValueError as err:
            raise HTTPException(400, detail=str(err)) from err

    @router.get("/api/pods/{namespace}/{name}/history",
                summary="What the run knows of a pod, there or gone at the end: its row, whom it preempted and "
                        "who preempted it, its events and attempts")
    def api_pod_history(request: Request, namespace: str, name: str, id_: str | None = API_ID) -> Any:
        snap = state.snapshot
        renamed = api_renamed(request, snap, namespace, name, id_, "/history")
        if renamed is not None:
            return renamed
        try:
            return snap.pods.history(f"{namespace}/{name}", snap.result)
        except KeyError as err:
            raise HTTPException(404, detail=str(err.args[0])) from err

    @router.get("/pods", response_class=HTMLResponse, include_in_schema=False)
    def pods_page(request: Request, namespace: str = Query("", max_length=MAX_FILTER),
                  phase: str = Query("", max_length=MAX_FILTER), node: str = Query("", max_length=MAX_FILTER),
                  priorityClass: str = Query("", max_length=MAX_FILTER),  # noqa: N803
                  owner: str = Query("", max_length=MAX_FILTER), q: str = Query("", max_length=MAX_FILTER),
                  sort: str = Query("name", max_length=20), offset: int = Query(0, ge=0),
                  limit: int = Query(PODS_PAGE, ge=1, le=MAX_PODS_PAGE)) -> HTMLResponse:
        filters = {"namespace": namespace, "phase": phase, "node": node, "priorityClass": priorityClass,
                   "owner": owner, "q": q}
        snap = state.snapshot  # one run throughout the page
        index = snap.pods
        try:
            found = index.select(namespace=namespace, phase=phase, node=node, priority_class=priorityClass,
                                 owner=owner, q=q, sort=sort, offset=offset, limit=limit)
        except ValueError as err:
            return page(request, "error.html", 400, snap=snap, message=str(err))
        return page(request, "pods.html", snap=snap, found=found, filters=filters, facets=index.facets(), sort=sort,
                    all_pods=len(index.rows))

    return router
