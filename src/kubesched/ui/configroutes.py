"""The scheduler configuration's page and API: ``/config`` (rendered on the server, no script
needed: each profile's plugins at each extension point, the Score weights, the plugins' args with
their defaults, the extenders and feature gates, and an editor), ``GET /api/config`` (the same as
JSON) and ``POST /api/config`` (a new configuration, as an edit).

The editor's form posts ``/config`` with one of two buttons: *apply* makes the configuration the
scenario's (an edit: the version it was made on is checked, 409 when stale, and a job simulates
again, as ``/edit`` does), *what-if* starts a what-if job whose changed run has this configuration
and changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

import yaml
from fastapi import FastAPI, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, Response

from kubesched.api.errors import KubeschedError
from kubesched.ui.config import config_view
from kubesched.ui.edits import MAX_EDIT_BYTES, api_version, form_version, http_status
from kubesched.ui.jobroutes import accepted, see_job
from kubesched.ui.requests import EditRequest, WhatIfRequest
from kubesched.ui.state import UiState


def _as_yaml(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False).rstrip()


def add_config_routes(app: FastAPI, state: UiState, page: Callable[..., HTMLResponse], if_match: Any) -> None:
    @app.get("/api/config", summary="The KubeSchedulerConfiguration the run uses (the scenario's, or kube-scheduler's "
                                    "default): per profile the plugins at each extension point in order, the Score "
                                    "weights, each plugin's args with their defaults; the pods no profile serves")
    def api_config() -> dict[str, Any]:
        snap = state.snapshot
        return {**config_view(snap), "version": snap.version}

    @app.post("/api/config", status_code=202,
              summary="Make a KubeSchedulerConfiguration (YAML, as --scheduler-config reads a file) the scenario's, "
                      "then a job simulates again. 400 (and no job) with the CLI's words for a configuration it "
                      "refuses; 409 for an edit made on an earlier version of the scenario")
    def api_configure(body: EditRequest, if_match: str | None = if_match) -> JSONResponse:
        try:
            return accepted(state.configure(body.yaml, api_version(body.version, if_match)))
        except KubeschedError as err:  # the CLI's words; a stale version: 409
            raise HTTPException(http_status(err), detail=str(err)) from err

    def config_page(request: Request, status_code: int = 200, /, **context: Any) -> HTMLResponse:
        snap = state.snapshot  # one version throughout: the form's version is that of the configuration shown
        view = config_view(snap)
        job_id = request.query_params.get("job", "")
        if "done" not in context and job_id.isdigit():  # an applied configuration's job, done
            try:
                job = state.jobs.get(int(job_id))
            except KeyError:
                pass
            else:
                if job.state == "done" and job.notes and job.kind == "config":
                    context = {"done": job.notes[0], **context}
        return page(request, "config.html", status_code, snap=snap, view=view, version=snap.version,
                    summary_now=snap.result["summary"], as_yaml=_as_yaml, **{"text": view["yaml"], **context})

    @app.get("/config", response_class=HTMLResponse, include_in_schema=False)
    def config_form(request: Request) -> HTMLResponse:
        return config_page(request)

    @app.post("/config", response_class=HTMLResponse, include_in_schema=False)
    async def config_answer(request: Request) -> Response:
        fields = {k: v[0] for k, v in parse_qs((await request.body()).decode("utf-8", "replace"),
                                                keep_blank_values=True).items()}
        text = fields.get("yaml", "")
        kept = text if len(text) <= MAX_EDIT_BYTES else ""

        def start() -> Any:
            if fields.get("action") == "whatif":  # a what-if of this configuration: the scenario stays as it is
                asked = WhatIfRequest(schedulerConfig=text)
                warnings: list[str] = []
                return state.whatif(asked.changes(warnings), asked, warnings)
            return state.configure(text, form_version(fields.get("version")))

        try:
            job = await run_in_threadpool(start)
        except KubeschedError as err:  # the CLI's words; the text stays as it was sent
            return config_page(request, http_status(err), error=str(err), text=kept)
        return see_job(job)
