"""The jobs' pages and API: ``/jobs/{id}`` (rendered on the server; it reloads itself with a
``<meta http-equiv="refresh">`` while the job runs, so it needs no script, shows the progress and a
cancel button, and leads to the result once the job is done), ``/jobs`` (every job kept, newest
first: those queued and running, and the last finished ones, each with its state, phase and result),
``/api/jobs/{id}`` (the job as JSON),
and cancelling (``DELETE /api/jobs/{id}``, ``POST /api/jobs/{id}/cancel``, the page's form posting
``/jobs/{id}/cancel``). A request that starts a job answers with :func:`accepted` (the API's 202)
or :func:`see_job` (a page's 303)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

from kubesched.ui.jobs import CANCELLED, DONE, FAILED, JOBS_KEPT, QUEUED, RUNNING, Job, Jobs

#: seconds between two reloads of a running job's page
REFRESH = 1
#: seconds between two reloads of the jobs list while a job is queued or running
JOBS_REFRESH = 5


def accepted(job: Job, **extra: Any) -> JSONResponse:
    """The API's answer to a request that started (or found) a job: 202, the job, and where to follow it."""
    return JSONResponse({**job.to_dict(), **extra}, status_code=202, headers={"Location": f"/api/jobs/{job.id}"})


def see_job(job: Job) -> RedirectResponse:
    """A page's answer to a form that started a job: 303 to the job's page."""
    return RedirectResponse(f"/jobs/{job.id}", status_code=303)


def add_job_routes(app: FastAPI, jobs: Jobs, page: Callable[..., HTMLResponse]) -> None:
    def kept(job_id: int) -> Job:
        try:
            return jobs.get(job_id)
        except KeyError as err:
            raise HTTPException(404, detail=str(err.args[0])) from err

    @app.get("/api/jobs", summary="The jobs kept: those queued or running, and the last ones finished")
    def api_jobs() -> list[dict[str, Any]]:
        return [job.to_dict() for job in jobs.all()]

    @app.get("/api/jobs/{job_id}", summary="A job: its state (queued, running, done, failed, cancelled), its "
                                           "progress (simulated time now and where the run ends), its error, "
                                           "and where its result is once it is done")
    def api_job(job_id: int) -> dict[str, Any]:
        return kept(job_id).to_dict()

    @app.delete("/api/jobs/{job_id}", summary="Cancel a job (its worker is stopped; nothing it would have "
                                              "changed changes)")
    def api_cancel(job_id: int) -> dict[str, Any]:
        kept(job_id)
        return jobs.cancel(job_id).to_dict()

    @app.post("/api/jobs/{job_id}/cancel", summary="Cancel a job (as DELETE /api/jobs/{id})")
    def api_cancel_post(job_id: int) -> dict[str, Any]:
        return api_cancel(job_id)

    @app.get("/jobs", response_class=HTMLResponse, include_in_schema=False)
    def jobs_page(request: Request, state: str = Query("", pattern="^(|queued|running|done|failed|cancelled)$")) -> HTMLResponse:
        kept = jobs.all()
        counts = {s: sum(j.state == s for j in kept) for s in (QUEUED, RUNNING, DONE, FAILED, CANCELLED)}
        shown = [j for j in reversed(kept) if not state or j.state == state]  # the newest first
        return page(request, "jobs.html", shown=shown, counts=counts, wanted=state, kept=JOBS_KEPT,
                    refresh=JOBS_REFRESH if counts[QUEUED] + counts[RUNNING] else None)

    @app.get("/jobs/{job_id}", response_class=HTMLResponse, include_in_schema=False)
    def job_page(request: Request, job_id: int) -> HTMLResponse:
        try:
            job = jobs.get(job_id)
        except KeyError as err:
            return page(request, "error.html", 404, message=str(err.args[0]))
        return page(request, "job.html", job=job, refresh=REFRESH)

    @app.post("/jobs/{job_id}/cancel", include_in_schema=False)
    def job_cancel(job_id: int) -> RedirectResponse:
        kept(job_id)
        return see_job(jobs.cancel(job_id))
