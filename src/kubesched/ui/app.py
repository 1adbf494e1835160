"""The web app: pages for people, the JSON API under ``/api`` for programs (documented by FastAPI at
``/docs`` and ``/openapi.json``). Pages are rendered on the server from templates; the one script,
shipped in the package like the styles, filters tables, loads a pool's nodes (and the nodes a search
finds) a page at a time from the API when they are asked for and reads the what-if form's files. The
pods list and the timeline are routes of their own (:mod:`kubesched.ui.views`). Nothing is loaded from
the network.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from fastapi import FastAPI, Header, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from kubesched.api.errors import KubeschedError
from kubesched.ui.cluster import MAX_PAGE, NODE_SORTS
from kubesched.ui.config import unserved_of
from kubesched.ui.configroutes import add_config_routes
from kubesched.ui.docs import serve_docs
from kubesched.ui.edits import MAX_EDIT_BYTES, api_version, form_version, http_status
from kubesched.ui.jobroutes import accepted, add_job_routes, see_job
from kubesched.ui.podlinks import MAX_IDENTITY, Found, api_renamed, pod_url, renamed_notice
from kubesched.ui.pods import gone_page
from kubesched.ui.requests import API_ID, MAX_NAME, EditRequest, WhatIfRequest
from kubesched.ui.runtimeline import moment_text
from kubesched.ui.security import Safety, protect
from kubesched.ui.state import MomentError, Running, Snapshot, UiState, WhatIfRun
from kubesched.ui.views import add_views

HERE = Path(__file__).parent
#: the every-node verdict table's page, and the rows of the score table the pod's page shows
NODES_PER_PAGE = 200
SCORE_ROWS = 50
#: the nodes of a pool the cluster page shows at a time, and the pending pods it lists
CLUSTER_NODES_PAGE = 50
PENDING_ROWS = 200
#: the objects the edit page lists (the rest are found by their name)
OBJECT_ROWS = 200
AT = Query(None, description="the simulated time to diagnose at (explain --at), at most the run's end; the end of "
                             "the run if omitted. The first time, the run up to then is simulated by a job: the "
                             "answer is then 202 with the job (its Location), and this again once it is done")
IF_MATCH = Header(None, description="the scenario's version the change is based on (the Kubesched-Scenario-Version "
                                    "header): 409 if the scenario has changed since; omitted or *: any version")
ID_HELP = ("the pod's identity (every pod link carries it): when the name is not that pod's in this run, the "
           "answer is a 307 to the page of the run's pod of that identity")
NODE_SORT = Query("name", pattern="^(" + "|".join(NODE_SORTS) + ")$",
                  description="name, or cpu, memory or pods: the share requested, the fullest first")


def _attachment(filename: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{filename}"'}


def _grouped_statuses(attempt: dict[str, Any] | None) -> list[tuple[str, list[str]]]:
    """An attempt's per-node statuses as (reason, nodes), the largest group first."""
    groups: dict[str, list[str]] = {}
    for node, reason in ((attempt or {}).get("nodeStatuses") or {}).items():
        groups.setdefault(reason, []).append(node)
    return sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))


def create_app(state: UiState, safety: Safety | None = None) -> FastAPI:
    """The app over ``state``; ``safety``: the names it answers to and its forms' token (default: a
    server on 127.0.0.1; see :mod:`kubesched.ui.security`). Its simulations run as ``state.jobs``,
    stopped with the server (the app's lifespan)."""
    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        state.jobs.shutdown()  # the server stops: so do its simulations

    app = FastAPI(title="kubesched ui", summary="The simulator's cluster, pods, timeline and what-ifs.",
                  version="1", docs_url=None, redoc_url=None, lifespan=lifespan)
    safety = safety or Safety.serving()
    # Host and same-origin checks on every request and write (the jobs' cancels too), form tokens, gzip
    protect(app, safety, lambda: state.version)
    serve_docs(app)  # /docs with its files served here
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    templates = Jinja2Templates(directory=HERE / "templates")
    templates.env.globals.update(csrf_token=safety.token)  # every form that changes something carries it
    templates.env.filters["moment"] = moment_text  # a moment in a link, exactly
    templates.env.filters["clock"] = lambda t: time.strftime("%H:%M:%S", time.localtime(t))  # a job's times

    def page(request: Request, template: str, status_code: int = 200, /, snap: Snapshot | None = None,
             **context: Any) -> HTMLResponse:
        """``template`` rendered; ``snap``: the snapshot the page was made of (default: the one now),
        whose scenario and version the header names."""
        snap = snap or state.snapshot

        def query(**changes: Any) -> str:
            """This page's query string with ``changes`` (None: without that parameter)."""
            params = {**request.query_params, **changes}
            return urlencode({k: v for k, v in params.items() if v is not None})

        def link(key: str, identity: str | None = None, **params: Any) -> str:
            """A pod's link, with its identity (default: that of the run's pod of that name)."""
            return pod_url(key, identity or snap.ids.identity(key), **params)

        return templates.TemplateResponse(request, template,
                                          {"scenario": snap.result["scenario"], "run_version": snap.version,
                                           "source": state.source, "query": query, "unserved": unserved_of(snap),
                                           "pod_url": link, "pod_identity": snap.ids.identity,
                                           "jobs_active": state.jobs.active(), **context},
                                          status_code=status_code)

    add_views(app, state, page)  # /pods, /api/pods, /timeline (kubesched.ui.views)
    add_config_routes(app, state, page, IF_MATCH)  # /config, /api/config (kubesched.ui.configroutes)

    # -- the JSON API ---------------------------------------------------------------------------
    @app.get("/api/result", summary="The SimulationResult (as kubesched simulate -o json, with the decisions)")
    def api_result() -> dict[str, Any]:
        return state.result

    @app.get("/api/cluster", summary="The nodes summed by pool and zone (allocation, taints, readiness, pressure, "
                                     "pending pods naming them), without the nodes themselves; the pending pods")
    def api_cluster() -> dict[str, Any]:
        return state.cluster()

    @app.get("/api/cluster/nodes", summary="A page of the nodes, sorted by name: a pool's (and zone's), or those "
                                           "whose name or a label (key=value) contains q")
    def api_cluster_nodes(pool: str | None = Query(None, max_length=MAX_NAME, description="the pool's name"),
                          zone: str | None = Query(None, max_length=MAX_NAME,
                                                   description="the zone (empty: nodes without a zone label)"),
                          q: str = Query("", max_length=MAX_NAME, description="part of a node's name or label"),
                          offset: int = Query(0, ge=0),
                          limit: int = Query(CLUSTER_NODES_PAGE, ge=1, le=MAX_PAGE), sort: str = NODE_SORT) -> dict[str, Any]:
        return state.cluster_nodes(pool=pool, zone=zone, find=q, offset=offset, limit=limit, sort=sort)

    @app.get("/api/cluster/nodes/{name}", summary="One node: its row, its labels and the pods on it at the end")
    def api_cluster_node(name: str) -> dict[str, Any]:
        try:
            return state.node(name)
        except KeyError as err:
            raise HTTPException(404, detail=str(err.args[0])) from err

    @app.get("/api/pods/{namespace}/{name}", summary="Why the pod is where it is (as kubesched explain -o json)")
    def api_pod(request: Request, namespace: str, name: str, at: float | None = AT, id_: str | None = API_ID) -> Any:
        snap = state.snapshot
        return api_renamed(request, snap, namespace, name, id_) or at_moment(
            lambda: state.pod(namespace, name, at, snap=snap))

    @app.get("/api/pods/{namespace}/{name}/nodes",
             summary="A page of the pod's per-node filter verdicts (explain's nodes), optionally by node name")
    def api_pod_nodes(request: Request, namespace: str, name: str, at: float | None = AT,
                      offset: int = Query(0, ge=0), limit: int = Query(100, ge=1, le=5000),
                      node: str = Query("", max_length=253, description="part of a node's name"),
                      id_: str | None = API_ID) -> Any:
        snap = state.snapshot
        return api_renamed(request, snap, namespace, name, id_, "/nodes") or at_moment(
            lambda: state.pod_nodes(namespace, name, at=at, offset=offset, limit=limit, find=node, snap=snap))

    @app.get("/api/pods/{namespace}/{name}/attempts",
             summary="The pod's scheduling attempts (as simulate --decisions -o json), scores per plugin")
    def api_pod_attempts(request: Request, namespace: str, name: str, id_: str | None = API_ID) -> Any:
        snap = state.snapshot
        return api_renamed(request, snap, namespace, name, id_, "/attempts") or state.attempts(namespace, name, snap=snap)

    @app.get("/api/pods/{namespace}/{name}/scores",
             summary="Each Score plugin's raw, normalised and weighted score on every feasible node, now")
    def api_pod_scores(request: Request, namespace: str, name: str, at: float | None = AT,
                       id_: str | None = API_ID) -> Any:
        snap = state.snapshot
        return api_renamed(request, snap, namespace, name, id_, "/scores") or at_moment(
            lambda: state.scores(namespace, name, at, snap=snap))

    def at_moment(answer: Any) -> Any:
        """A pod's document (404: the pod is not there; 400: a moment the run has not), or 202 and the
        job simulating the run to that moment."""
        try:
            return answer()
        except KeyError as err:
            raise HTTPException(404, detail=str(err.args[0])) from err
        except MomentError as err:
            raise HTTPException(400, detail=str(err)) from err
        except Running as running:
            return accepted(running.job)

    @app.get("/api/timeline", summary="Pods pending and running over time, and every event")
    def api_timeline() -> dict[str, Any]:
        return state.timeline()

    @app.post("/api/whatif", status_code=202,
              summary="Start a job simulating the cluster with the changes (its baseline: the run shown); when "
                      "done, its result is the diff (as kubesched whatif -o json) at /api/whatif/{id}")
    def api_whatif(body: WhatIfRequest) -> JSONResponse:
        warnings: list[str] = []
        try:
            job = state.whatif(body.changes(warnings), body, warnings)
        except KubeschedError as err:  # WhatIfError and bad input: the CLI's message, and nothing runs
            raise HTTPException(400, detail=str(err)) from err
        return accepted(job, warnings=warnings)

    @app.get("/api/whatif/{run_id}", summary="A what-if run's diff (the last few runs are kept)")
    def api_whatif_run(run_id: int) -> dict[str, Any]:
        return kept_whatif(run_id).diff

    @app.get("/api/whatif/{run_id}/scenario.yaml", response_class=PlainTextResponse,
             summary="A what-if run's changed scenario (as kubesched whatif --save-changed writes it)")
    def api_whatif_scenario(run_id: int) -> PlainTextResponse:
        try:
            text = kept_whatif(run_id).changed_yaml()
        except KeyError as err:  # run on a version an edit replaced
            raise HTTPException(410, detail=str(err.args[0])) from err
        return PlainTextResponse(text, media_type="application/yaml",
                                 headers=_attachment(f"whatif-{run_id}.yaml"))

    @app.get("/api/whatif/{run_id}/report.html", response_class=HTMLResponse,
             summary="A what-if run's HTML report (as kubesched whatif --report writes it)")
    def api_whatif_report(run_id: int) -> HTMLResponse:
        return HTMLResponse(kept_whatif(run_id).report(), headers=_attachment(f"whatif-{run_id}.html"))

    def kept_whatif(run_id: int) -> WhatIfRun:
        try:
            return state.whatif_run(run_id)
        except KeyError as err:
            raise HTTPException(404, detail=str(err.args[0])) from err

    @app.get("/api/objects", summary="The scenario's objects (kind, namespace, name), in order")
    def api_objects() -> list[dict[str, Any]]:
        return state.objects()

    @app.get("/api/objects/{kind}/{name}", response_class=PlainTextResponse,
             summary="One object of the scenario as YAML (namespace: for a namespaced kind)")
    def api_object(kind: str, name: str, namespace: str = "") -> PlainTextResponse:
        try:
            return PlainTextResponse(state.object_yaml(kind, namespace, name), media_type="application/yaml")
        except KeyError as err:
            raise HTTPException(404, detail=str(err.args[0])) from err

    @app.post("/api/objects", status_code=202,
              summary="Add or replace objects (YAML or JSON, as whatif --apply reads a file), then a job simulates "
                      "again; the pages show the new run once it is done. 409 (and no job) for an edit made on an "
                      "earlier version of the scenario")
    def api_edit(body: EditRequest, if_match: str | None = IF_MATCH) -> JSONResponse:
        try:
            return accepted(state.edit(body.yaml, api_version(body.version, if_match)))
        except KubeschedError as err:  # the loader's error, naming the document and the field; a stale version
            raise HTTPException(http_status(err), detail=str(err)) from err

    @app.delete("/api/objects/{kind}/{name}", status_code=202,
                summary="Delete one object, then a job simulates again (409, and no job, for a delete made on an "
                        "earlier version of the scenario)")
    def api_delete(kind: str, name: str, namespace: str = "", version: int | None = None,
                   if_match: str | None = IF_MATCH) -> JSONResponse:
        try:
            return accepted(state.delete(kind, namespace, name, api_version(version, if_match)))
        except KubeschedError as err:
            raise HTTPException(http_status(err), detail=str(err)) from err

    @app.get("/api/scenario.yaml", response_class=PlainTextResponse,
             summary="The scenario as it is now, with the edits (kubesched simulate reads it)")
    def api_scenario() -> PlainTextResponse:
        return PlainTextResponse(state.scenario_yaml(), media_type="application/yaml",
                                 headers=_attachment(f"{state.result['scenario']}.yaml"))

    # -- pages ------------------------------------------------------------------------------------
    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def cluster_page(request: Request) -> HTMLResponse:
        snap = state.snapshot  # one run throughout the page
        return page(request, "cluster.html", snap=snap, cluster=snap.view.summary, pending_rows=PENDING_ROWS,
                    page_size=CLUSTER_NODES_PAGE)

    @app.get("/nodes", response_class=HTMLResponse, include_in_schema=False)
    def nodes_page(request: Request, pool: str | None = Query(None, max_length=MAX_NAME),
                   zone: str | None = Query(None, max_length=MAX_NAME), q: str = Query("", max_length=MAX_NAME),
                   offset: int = Query(0, ge=0), sort: str = NODE_SORT) -> HTMLResponse:
        """A page of nodes rendered on the server (the same as the cluster page's lists, which need
        JavaScript): a pool's (and zone's), or those whose name or a label contains ``q``."""
        snap = state.snapshot
        found = snap.view.nodes(pool=pool, zone=zone, find=q, offset=offset, limit=CLUSTER_NODES_PAGE, sort=sort)
        return page(request, "nodes.html", snap=snap, found=found, pool=pool, zone=zone, find=q,
                    page_size=CLUSTER_NODES_PAGE)

    @app.get("/nodes/{name}", response_class=HTMLResponse, include_in_schema=False)
    def node_page(request: Request, name: str) -> HTMLResponse:
        snap = state.snapshot
        try:
            return page(request, "node.html", snap=snap, node=snap.view.node(name))
        except KeyError as err:
            return page(request, "error.html", 404, snap=snap, message=str(err.args[0]))

    @app.get("/pods/{namespace}/{name}", response_class=HTMLResponse, include_in_schema=False)
    def pod_page(request: Request, namespace: str, name: str, at: float | None = AT,
                 attempt: int | None = None, page_: int = Query(1, alias="page", ge=1),
                 id_: str | None = Query(None, alias="id", max_length=MAX_IDENTITY, description=ID_HELP),
                 was: str | None = Query(None, max_length=MAX_IDENTITY), was_in: int | None = None) -> Response:
        key, snap = f"{namespace}/{name}", state.snapshot  # one run throughout the page
        found = snap.ids.find(key, id_ or None)
        if found is not None:  # the link's pod has another name in this run: its page, saying so
            return renamed(request, found)
        notice = renamed_notice(snap, key, id_ or None, was, was_in)
        try:
            diagnosis = state.pod(namespace, name, at, snap=snap)
            scores = state.scores(namespace, name, at, snap=snap)["nodes"]
        except KeyError as err:  # a pod gone at the end still has a page: what the run knows of it
            gone = gone_page(page, request, snap, key, notice) if at is None else None
            return gone or page(request, "error.html", 404, snap=snap, message=str(err.args[0]))
        except MomentError as err:
            return page(request, "error.html", 400, snap=snap, message=str(err))
        except Running as running:  # the run up to that moment: its job's page leads back here
            return see_job(running.job)
        attempts = state.attempts(namespace, name, snap=snap)
        chosen = next((a for a in attempts if a["number"] == attempt), None)
        if chosen is None and attempts and attempt is None:
            chosen = attempts[-1]
        pages = max(1, -(-len(diagnosis["nodes"]) // NODES_PER_PAGE))
        page_ = min(page_, pages)
        return page(request, "pod.html", snap=snap, d=diagnosis, key=key, at=at, notice=notice,
                    record=snap.result["pods"].get(key) or {}, pre=snap.pods.preemptions(key),
                    attempts=attempts, chosen=chosen,
                    statuses=_grouped_statuses(chosen), scores=scores[:SCORE_ROWS], scored=len(scores),
                    verdicts=diagnosis["nodes"][(page_ - 1) * NODES_PER_PAGE:page_ * NODES_PER_PAGE],
                    page_number=page_, pages=pages)

    def renamed(request: Request, found: Found) -> RedirectResponse:
        """307 to the page of the pod a link meant, which has another name in this run, with what
        the link named (the page says so) and the link's other parameters."""
        params = {k: v for k, v in request.query_params.items() if k not in ("id", "was", "was_in")}
        return RedirectResponse(pod_url(found.key, found.identity, was=found.was, was_in=found.version, **params),
                                status_code=307)

    def edit_page(request: Request, status_code: int = 200, /, **context: Any) -> HTMLResponse:
        find = request.query_params.get("find", "")
        if "done" not in context and request.query_params.get("job", "").isdigit():  # an edit's job, done
            try:
                job = state.jobs.get(int(request.query_params["job"]))
            except KeyError:
                pass
            else:
                if job.state == "done" and job.notes:
                    context = {"done": job.notes[0], "warnings": job.notes[1:], **context}
        snap = state.snapshot  # one version throughout: the objects listed are those the forms' version names
        objects = [o for o in snap.objects() if not find or find in f"{o['kind']} {o['namespace']}/{o['name']}"]
        return page(request, "edit.html", status_code, snap=snap, objects=objects[:OBJECT_ROWS], matching=len(objects),
                    find=find, summary_now=snap.result["summary"], version=snap.version, **{"text": "", **context})

    @app.get("/edit", response_class=HTMLResponse, include_in_schema=False)
    def edit_form(request: Request, kind: str = "", namespace: str = "", name: str = "") -> HTMLResponse:
        if not kind:
            return edit_page(request)
        try:
            return edit_page(request, text=state.object_yaml(kind, namespace, name))
        except KeyError as err:
            return edit_page(request, 404, error=str(err.args[0]))

    @app.post("/edit", response_class=HTMLResponse, include_in_schema=False)
    async def edit_answer(request: Request) -> Response:
        fields = {k: v[0] for k, v in parse_qs((await request.body()).decode("utf-8", "replace"),
                                                keep_blank_values=True).items()}
        text = fields.get("yaml", "")
        try:  # the text read and checked here (the CLI's errors, a stale version: 409, at once); the run is a job
            based_on = form_version(fields.get("version"))
            if fields.get("action") == "delete":
                job = await run_in_threadpool(state.delete, fields.get("kind", ""), fields.get("namespace", ""),
                                              fields.get("name", ""), based_on)
            else:
                job = await run_in_threadpool(state.edit, text, based_on)
        except KubeschedError as err:  # the CLI's words; the text stays as it was sent
            return edit_page(request, http_status(err), error=str(err),
                             text=text if len(text) <= MAX_EDIT_BYTES else "")
        return see_job(job)

    def whatif_page(request: Request, asked: WhatIfRequest, status_code: int = 200, **answer: Any) -> HTMLResponse:
        snap = state.snapshot
        nodes = [n["node"] for n in snap.result["nodes"]]
        return page(request, "whatif.html", status_code, snap=snap, nodes=nodes, asked=asked, max_text=MAX_EDIT_BYTES,
                    **answer)

    @app.get("/whatif", response_class=HTMLResponse, include_in_schema=False)
    def whatif_form(request: Request, run: int | None = Query(None, description="a what-if run kept")) -> HTMLResponse:
        if run is None:
            return whatif_page(request, WhatIfRequest())
        try:
            kept = state.whatif_run(run)
        except KeyError as err:
            return whatif_page(request, WhatIfRequest(), 404, error=str(err.args[0]))
        asked = kept.asked if isinstance(kept.asked, WhatIfRequest) else WhatIfRequest()
        return whatif_page(request, asked, diff=kept.diff, run_id=kept.id, warnings=kept.warnings)

    @app.post("/whatif", response_class=HTMLResponse, include_in_schema=False)
    async def whatif_answer(request: Request) -> Response:
        asked = WhatIfRequest.from_form(await request.body())

        def start() -> Any:  # the texts read and the changes checked here: their errors at once
            warnings: list[str] = []
            return state.whatif(asked.changes(warnings), asked, warnings)

        try:
            job = await run_in_threadpool(start)
        except KubeschedError as err:  # WhatIfError and bad input: the CLI's message, the form as it was
            return whatif_page(request, asked, 400, error=str(err))
        return see_job(job)

    add_job_routes(app, state.jobs, page)

    return app
