"""The jobs list (``/jobs``): every job kept, the newest first, with its state, its phase while it
runs and a link to its result once done; filtered by state; the header links it and counts the jobs
queued or running. (A failed job in the list: tests/ui/test_jobs_safety.py, two edits of one version.)"""

from __future__ import annotations

import re
import time
from html import unescape
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from kubesched.ui.state import UiState  # noqa: E402

from .conftest import followed, ui_client  # noqa: E402

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo.yaml")


def _ended(client: Any, job_id: int) -> dict[str, Any]:
    """The job once it has ended (as a script polls it)."""
    deadline = time.monotonic() + 120
    while (job := client.get(f"/api/jobs/{job_id}").json())["state"] not in ("done", "failed", "cancelled"):
        assert time.monotonic() < deadline, job
        time.sleep(0.05)
    return job


def _rows(html: str) -> list[tuple[str, str]]:
    """(job id, state) of each row of the jobs table, in order."""
    return re.findall(r'<tr data-job="(\d+)" data-state="(\w+)">', html)


def test_the_jobs_list_shows_finished_and_cancelled_jobs_newest_first() -> None:
    client = ui_client(UiState.load(DEMO))
    empty = client.get("/jobs")
    assert empty.status_code == 200 and 'id="jobs-none"' in empty.text
    assert '<a href="/jobs" id="nav-jobs">Jobs</a>' in client.get("/").text  # no job: no count

    done = followed(client, client.post("/api/whatif", json={"cordon": ["node-2"]}))
    cancelled = client.post("/api/whatif", json={"cordon": ["node-1"]}).json()
    client.delete(f"/api/jobs/{cancelled['id']}")
    cancelled = _ended(client, cancelled["id"])
    states = {done["id"]: done["state"], cancelled["id"]: cancelled["state"]}
    assert done["state"] == "done" and cancelled["state"] == "cancelled"

    html = unescape(client.get("/jobs").text)
    rows = _rows(html)
    assert [int(i) for i, _ in rows] == sorted(states, reverse=True)  # the newest first
    assert {int(i): s for i, s in rows} == states
    assert f'<a href="/jobs/{done["id"]}">{done["id"]}</a>' in html
    assert f'<a href="{done["result"]}">the result</a>' in html
    assert '<meta http-equiv="refresh"' not in html  # nothing runs: it does not reload
    # by state
    only = _rows(client.get("/jobs?state=done").text)
    assert only == [(str(done["id"]), "done")]
    assert client.get("/jobs?state=bogus").status_code == 422


def test_the_header_counts_the_jobs_queued_or_running(tmp_path: Path) -> None:
    from .test_jobs import CHURN, QUIET

    path = tmp_path / "quiet.yaml"
    path.write_text(QUIET)
    client = ui_client(UiState.load(str(path)))
    job = client.post("/api/whatif", json={"apply": CHURN}).json()  # runs for days: cancelled below
    try:
        page = client.get("/pods").text
        assert '<span class="badge" id="jobs-active" title="jobs queued or running">1</span>' in page
        html = client.get("/jobs").text
        assert '<meta http-equiv="refresh"' in html
        assert _rows(html)[0][0] == str(job["id"]) and _rows(html)[0][1] in ("queued", "running")
    finally:
        client.delete(f"/api/jobs/{job['id']}")
    assert _ended(client, job["id"])["state"] == "cancelled"
    assert 'id="jobs-active"' not in client.get("/").text
