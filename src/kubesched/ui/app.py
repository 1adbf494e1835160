"""The web app: pages for people, the JSON API under ``/api`` for programs (documented by FastAPI at
``/docs`` and ``/openapi.json``). Pages are rendered on the server from templates; the one script,
shipped in the package like the styles, filters tables, loads a pool's nodes (and the nodes a search
finds) a page at a time from the API when they are asked for and reads the what-if form's files. The
pods list and the timeline are routes of their own (:mod:`kubesched.ui.views`). Nothing is loaded from
the network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, Field

from kubesched.analysis.whatif.changes import Changes, WhatIfError
from kubesched.api.errors import KubeschedError
from kubesched.ui.cluster import MAX_PAGE, NODE_SORTS
from kubesched.ui.edits import (
    APPLY_FILE,
    MAX_EDIT_BYTES,
    SCHEDULER_CONFIG_FILE,
    read_apply_text,
    read_scheduler_config_text,
)
from kubesched.ui.state import UiState, WhatIfRun
from kubesched.ui.views import add_views

HERE = Path(__file__).parent
#: the longest name a Kubernetes object may have (a DNS subdomain)
MAX_NAME = 253
#: the every-node verdict table's page, and the rows of the score table the pod's page shows
NODES_PER_PAGE = 200
SCORE_ROWS = 50
#: the nodes of a pool the cluster page shows at a time, and the pending pods it lists
CLUSTER_NODES_PAGE = 50
PENDING_ROWS = 200
#: the objects the edit page lists (the rest are found by their name)
OBJECT_ROWS = 200
AT = Query(None, ge=0, description="the simulated time to diagnose at (explain --at); the end of the run if omitted")
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


class EditRequest(BaseModel):
    """Objects to add or replace."""

    yaml: str = Field(description="one or more YAML (or JSON) documents, as a file for kubesched whatif --apply")


class WhatIfRequest(BaseModel):
    """The changes of a what-if, as ``kubesched whatif`` takes them."""

    drain: list[str] = Field(default_factory=list, description="nodes to drain at t=0, as kubectl drain")
    cordon: list[str] = Field(default_factory=list, description="nodes to cordon")
    ignoreDaemonSets: bool = False  # noqa: N815 - the JSON field's name
    force: bool = False
    deleteEmptyDirData: bool = False  # noqa: N815
    preemption: bool | None = Field(default=None, description="true: enable preemption; false: disable it")
    priorityClass: list[str] = Field(default_factory=list,  # noqa: N815
                                     description="SELECTOR:CLASS, as whatif --priority-class")
    apply: str = Field(default="", description=f"objects to add or replace: YAML or JSON documents, read as "
                                               f"whatif --apply reads a file (named {APPLY_FILE} in errors)")
    schedulerConfig: str = Field(default="",  # noqa: N815
                                 description="a KubeSchedulerConfiguration for the changed run, read as whatif "
                                             f"--scheduler-config reads a file (named {SCHEDULER_CONFIG_FILE} "
                                             "in errors)")

    @classmethod
    def from_form(cls, body: bytes) -> WhatIfRequest:
        """The changes the what-if page's form posts (``application/x-www-form-urlencoded``): names
        comma-separated, a checkbox there when ticked, preemption "", "true" or "false"."""
        fields = parse_qs(body.decode("utf-8", "replace"))

        def names(key: str) -> list[str]:
            return [name.strip() for value in fields.get(key, ()) for name in value.split(",") if name.strip()]

        def text(key: str) -> str:
            return (fields.get(key) or [""])[0]

        preemption = text("preemption")
        return cls(drain=names("drain"), cordon=names("cordon"), priorityClass=names("priorityClass"),
                   ignoreDaemonSets="ignoreDaemonSets" in fields, force="force" in fields,
                   deleteEmptyDirData="deleteEmptyDirData" in fields,
                   preemption=None if preemption == "" else preemption == "true",
                   apply=text("apply"), schedulerConfig=text("schedulerConfig"))

    def changes(self, warnings: list[str] | None = None) -> Changes:
        """The changes, as ``kubesched whatif`` makes them of its options (``warnings``: where the
        warnings it would print go, such as unknown fields of the objects applied)."""
        flags = {"force": self.force, "ignoreDaemonSets": self.ignoreDaemonSets,
                 "deleteEmptyDirData": self.deleteEmptyDirData}
        if not self.drain and any(flags.values()):
            raise WhatIfError("force, ignoreDaemonSets and deleteEmptyDirData go with drain")
        for option, names in (("--drain", self.drain), ("--cordon", self.cordon)):
            for name in names:  # refused before the cluster is looked at, and not echoed whole
                if len(name) > MAX_NAME:
                    raise WhatIfError(f"{option} {name[:40]}…: not a node name ({len(name):,} characters; "
                                      f"a Kubernetes object's name has at most {MAX_NAME})")
        changes = Changes(preemption=self.preemption, cordon=list(self.cordon), drain=list(self.drain),
                          drain_options={k: v for k, v in flags.items() if v})
        for item in self.priorityClass:
            if len(item) > 2 * MAX_NAME + 1000:  # a selector and a class name, with room to spare
                raise WhatIfError(f"priorityClass {item[:40]}…: too long for SELECTOR:CLASS ({len(item):,} characters)")
            selector, sep, pc = item.rpartition(":")
            if not sep or not selector or not pc:
                raise WhatIfError(f"priorityClass {item!r}: expected SELECTOR:CLASS")
            changes.priority_classes.append((selector, pc))
        if self.apply.strip():
            changes.apply, said = read_apply_text(self.apply, APPLY_FILE)
            if warnings is not None:
                warnings.extend(said)
        if self.schedulerConfig.strip():
            changes.scheduler_configuration, changes.scheduler_configuration_source = read_scheduler_config_text(
                self.schedulerConfig)
        return changes


def create_app(state: UiState) -> FastAPI:
    app = FastAPI(title="kubesched ui", summary="The simulator's cluster, pods, timeline and what-ifs.",
                  version="1")
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    templates = Jinja2Templates(directory=HERE / "templates")

    def page(request: Request, template: str, status_code: int = 200, /, **context: Any) -> HTMLResponse:
        def query(**changes: Any) -> str:
            """This page's query string with ``changes`` (None: without that parameter)."""
            params = {**request.query_params, **changes}
            return urlencode({k: v for k, v in params.items() if v is not None})

        return templates.TemplateResponse(request, template,
                                          {"scenario": state.result["scenario"], "source": state.source, "query": query,
                                           **context},
                                          status_code=status_code)

    pods = add_views(app, templates, state, page)  # /pods, /api/pods, /timeline (kubesched.ui.views)

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
    def api_pod(namespace: str, name: str, at: float | None = AT) -> dict[str, Any]:
        try:
            return state.pod(namespace, name, at)
        except KeyError as err:
            raise HTTPException(404, detail=str(err.args[0])) from err

    @app.get("/api/pods/{namespace}/{name}/nodes",
             summary="A page of the pod's per-node filter verdicts (explain's nodes), optionally by node name")
    def api_pod_nodes(namespace: str, name: str, at: float | None = AT, offset: int = Query(0, ge=0),
                      limit: int = Query(100, ge=1, le=5000),
                      node: str = Query("", max_length=253, description="part of a node's name")) -> dict[str, Any]:
        try:
            return state.pod_nodes(namespace, name, at=at, offset=offset, limit=limit, find=node)
        except KeyError as err:
            raise HTTPException(404, detail=str(err.args[0])) from err

    @app.get("/api/pods/{namespace}/{name}/attempts",
             summary="The pod's scheduling attempts (as simulate --decisions -o json), scores per plugin")
    def api_pod_attempts(namespace: str, name: str) -> list[dict[str, Any]]:
        return state.attempts(namespace, name)

    @app.get("/api/pods/{namespace}/{name}/scores",
             summary="Each Score plugin's raw, normalised and weighted score on every feasible node, now")
    def api_pod_scores(namespace: str, name: str, at: float | None = AT) -> dict[str, Any]:
        try:
            return state.scores(namespace, name, at)
        except KeyError as err:
            raise HTTPException(404, detail=str(err.args[0])) from err

    @app.get("/api/timeline", summary="Pods pending and running over time, and every event")
    def api_timeline() -> dict[str, Any]:
        return state.timeline()

    @app.post("/api/whatif", summary="Simulate the cluster as it is and with the changes (as kubesched whatif -o json)")
    def api_whatif(body: WhatIfRequest, response: Response) -> dict[str, Any]:
        try:
            run = state.whatif(body.changes())
        except KubeschedError as err:  # WhatIfError and bad input: the CLI's message
            raise HTTPException(400, detail=str(err)) from err
        response.headers["Content-Location"] = f"/api/whatif/{run.id}"  # where its downloads are
        return run.diff

    @app.get("/api/whatif/{run_id}", summary="A what-if run's diff (the last few runs are kept)")
    def api_whatif_run(run_id: int) -> dict[str, Any]:
        return kept_whatif(run_id).diff

    @app.get("/api/whatif/{run_id}/scenario.yaml", response_class=PlainTextResponse,
             summary="A what-if run's changed scenario (as kubesched whatif --save-changed writes it)")
    def api_whatif_scenario(run_id: int) -> PlainTextResponse:
        return PlainTextResponse(kept_whatif(run_id).changed_yaml(), media_type="application/yaml",
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

    @app.post("/api/objects", summary="Add or replace objects (YAML or JSON, as whatif --apply reads a file), "
                                      "then simulate again")
    def api_edit(body: EditRequest) -> dict[str, Any]:
        try:
            return state.edit(body.yaml)
        except KubeschedError as err:  # the loader's error, naming the document and the field
            raise HTTPException(400, detail=str(err)) from err

    @app.delete("/api/objects/{kind}/{name}", summary="Delete one object, then simulate again")
    def api_delete(kind: str, name: str, namespace: str = "") -> dict[str, Any]:
        try:
            return state.delete(kind, namespace, name)
        except KubeschedError as err:
            raise HTTPException(400, detail=str(err)) from err

    @app.get("/api/scenario.yaml", response_class=PlainTextResponse,
             summary="The scenario as it is now, with the edits (kubesched simulate reads it)")
    def api_scenario() -> PlainTextResponse:
        return PlainTextResponse(state.scenario_yaml(), media_type="application/yaml",
                                 headers=_attachment(f"{state.result['scenario']}.yaml"))

    # -- pages ------------------------------------------------------------------------------------
    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def cluster_page(request: Request) -> HTMLResponse:
        return page(request, "cluster.html", cluster=state.cluster(), pending_rows=PENDING_ROWS,
                    page_size=CLUSTER_NODES_PAGE)

    @app.get("/nodes", response_class=HTMLResponse, include_in_schema=False)
    def nodes_page(request: Request, pool: str | None = Query(None, max_length=MAX_NAME),
                   zone: str | None = Query(None, max_length=MAX_NAME), q: str = Query("", max_length=MAX_NAME),
                   offset: int = Query(0, ge=0), sort: str = NODE_SORT) -> HTMLResponse:
        """A page of nodes rendered on the server (the same as the cluster page's lists, which need
        JavaScript): a pool's (and zone's), or those whose name or a label contains ``q``."""
        found = state.cluster_nodes(pool=pool, zone=zone, find=q, offset=offset, limit=CLUSTER_NODES_PAGE, sort=sort)
        return page(request, "nodes.html", found=found, pool=pool, zone=zone, find=q, page_size=CLUSTER_NODES_PAGE)

    @app.get("/nodes/{name}", response_class=HTMLResponse, include_in_schema=False)
    def node_page(request: Request, name: str) -> HTMLResponse:
        try:
            return page(request, "node.html", node=state.node(name))
        except KeyError as err:
            return page(request, "error.html", 404, message=str(err.args[0]))

    @app.get("/pods/{namespace}/{name}", response_class=HTMLResponse, include_in_schema=False)
    def pod_page(request: Request, namespace: str, name: str, at: float | None = AT,
                 attempt: int | None = None, page_: int = Query(1, alias="page", ge=1)) -> HTMLResponse:
        key = f"{namespace}/{name}"
        try:
            diagnosis = state.pod(namespace, name, at)
            scores = state.scores(namespace, name, at)["nodes"]
        except KeyError as err:  # a pod gone at the end still has a page: what the run knows of it
            gone = pods.gone_page(page, request, key) if at is None else None
            return gone or page(request, "error.html", 404, message=str(err.args[0]))
        attempts = state.attempts(namespace, name)
        chosen = next((a for a in attempts if a["number"] == attempt), None)
        if chosen is None and attempts and attempt is None:
            chosen = attempts[-1]
        pages = max(1, -(-len(diagnosis["nodes"]) // NODES_PER_PAGE))
        page_ = min(page_, pages)
        return page(request, "pod.html", d=diagnosis, key=key, at=at,
                    record=state.result["pods"].get(key) or {}, attempts=attempts, chosen=chosen,
                    statuses=_grouped_statuses(chosen), scores=scores[:SCORE_ROWS], scored=len(scores),
                    verdicts=diagnosis["nodes"][(page_ - 1) * NODES_PER_PAGE:page_ * NODES_PER_PAGE],
                    page_number=page_, pages=pages)

    def edit_page(request: Request, status_code: int = 200, /, **context: Any) -> HTMLResponse:
        find = request.query_params.get("find", "")
        objects = [o for o in state.objects() if not find or find in f"{o['kind']} {o['namespace']}/{o['name']}"]
        return page(request, "edit.html", status_code, objects=objects[:OBJECT_ROWS], matching=len(objects),
                    find=find, summary_now=state.result["summary"], **{"text": "", **context})

    @app.get("/edit", response_class=HTMLResponse, include_in_schema=False)
    def edit_form(request: Request, kind: str = "", namespace: str = "", name: str = "") -> HTMLResponse:
        if not kind:
            return edit_page(request)
        try:
            return edit_page(request, text=state.object_yaml(kind, namespace, name))
        except KeyError as err:
            return edit_page(request, 404, error=str(err.args[0]))

    @app.post("/edit", response_class=HTMLResponse, include_in_schema=False)
    async def edit_answer(request: Request) -> HTMLResponse:
        fields = {k: v[0] for k, v in parse_qs((await request.body()).decode("utf-8", "replace"),
                                                keep_blank_values=True).items()}
        text = fields.get("yaml", "")
        try:
            if fields.get("action") == "delete":
                done = await run_in_threadpool(state.delete, fields.get("kind", ""), fields.get("namespace", ""),
                                               fields.get("name", ""))
                return edit_page(request, done=f"deleted {done['deleted']}")
            done = await run_in_threadpool(state.edit, text)
        except KubeschedError as err:  # the CLI's words; the text stays as it was sent
            return edit_page(request, 400, error=str(err), text=text if len(text) <= MAX_EDIT_BYTES else "")
        return edit_page(request, done="applied " + ", ".join(done["applied"]), warnings=done["warnings"], text=text)

    def whatif_page(request: Request, asked: WhatIfRequest, status_code: int = 200, **answer: Any) -> HTMLResponse:
        nodes = [n["node"] for n in state.result["nodes"]]
        return page(request, "whatif.html", status_code, nodes=nodes, asked=asked, max_text=MAX_EDIT_BYTES,
                    **answer)

    @app.get("/whatif", response_class=HTMLResponse, include_in_schema=False)
    def whatif_form(request: Request) -> HTMLResponse:
        return whatif_page(request, WhatIfRequest())

    @app.post("/whatif", response_class=HTMLResponse, include_in_schema=False)
    async def whatif_answer(request: Request) -> HTMLResponse:
        asked = WhatIfRequest.from_form(await request.body())
        warnings: list[str] = []

        def run_whatif() -> WhatIfRun:  # seconds on a big cluster, and the texts to read first
            return state.whatif(asked.changes(warnings))

        try:
            run = await run_in_threadpool(run_whatif)
        except KubeschedError as err:  # WhatIfError and bad input: the CLI's message, the form as it was
            return whatif_page(request, asked, 400, error=str(err))
        return whatif_page(request, asked, diff=run.diff, run_id=run.id, warnings=warnings)

    return app
