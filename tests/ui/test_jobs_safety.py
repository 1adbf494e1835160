"""The jobs under the ui's safety checks: cancelling a job is a write like any other (a page of
another site cannot cancel one, the job page's form carries the token), an edit made on an earlier
version starts no job, and an edit whose job finds another edit swapped in while it ran fails
naming both versions and changes nothing.

The slow job is test_jobs.py's: a what-if applying pods that churn for days of simulated time."""

from __future__ import annotations

import re
import time
from html import unescape
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from kubesched.ui.jobs import Jobs  # noqa: E402
from kubesched.ui.security import VERSION_HEADER  # noqa: E402
from kubesched.ui.state import UiState  # noqa: E402

from .conftest import BASE_URL, followed, form_fields, ui_client  # noqa: E402
from .test_jobs import CHURN, PATIENCE, QUIET  # noqa: E402

EVIL = "http://evil.example"


@pytest.fixture()
def quiet(tmp_path: Path) -> str:
    path = tmp_path / "quiet.yaml"
    path.write_text(QUIET)
    return str(path)


def _progressing(client: TestClient, job_id: int, past: float = 0) -> float:
    """The simulated time the job has reached once it is running past ``past``."""
    deadline = time.monotonic() + PATIENCE
    while True:
        job = client.get(f"/api/jobs/{job_id}").json()
        assert job["state"] in ("queued", "running"), job
        if job["state"] == "running" and job["progress"].get("now", 0) > past:
            return float(job["progress"]["now"])
        assert time.monotonic() < deadline, job
        time.sleep(0.05)


def _node(name: str) -> str:
    return (f"apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\n"
            'status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}\n')


def test_another_site_cannot_cancel_a_job_and_the_page_form_can(quiet: str) -> None:
    client = ui_client(UiState.load(quiet))
    started = client.post("/api/whatif", json={"apply": CHURN})
    assert started.status_code == 202
    job_id = started.json()["id"]
    reached = _progressing(client, job_id)
    page = client.get(f"/jobs/{job_id}").text
    token = form_fields(client, f"/jobs/{job_id}")["csrf_token"]
    assert f'action="/jobs/{job_id}/cancel"' in page and len(token) >= 32
    for headers in ({"Origin": EVIL}, {"Sec-Fetch-Site": "cross-site"}, {"Referer": EVIL + "/cats"}):
        for method, path, data in (("DELETE", f"/api/jobs/{job_id}", None),
                                   ("POST", f"/api/jobs/{job_id}/cancel", None),
                                   ("POST", f"/jobs/{job_id}/cancel", {"csrf_token": token})):  # even with the token
            answer = client.request(method, path, data=data, headers=headers)
            assert answer.status_code == 403, (method, path, headers)
            assert "refused: this change was sent by " in answer.text and "nothing was changed" in answer.text
    # the page's form without its token (another process's page, or none) is refused too
    for sent in ({}, {"csrf_token": "guessed"}):
        answer = client.post(f"/jobs/{job_id}/cancel", data=sent, headers={"Origin": BASE_URL})
        assert answer.status_code == 403 and "Reload the page" in answer.text
    # the job was not cancelled: it runs on, past where it was
    _progressing(client, job_id, reached)
    assert client.get(f"/api/jobs/{job_id}").json()["state"] == "running"
    # from the job's own page, with its token, the form cancels it
    cancelled = client.post(f"/jobs/{job_id}/cancel", data={"csrf_token": token},
                            headers={"Origin": BASE_URL, "Sec-Fetch-Site": "same-origin"}, follow_redirects=False)
    assert cancelled.status_code == 303 and cancelled.headers["location"] == f"/jobs/{job_id}"
    assert followed(client, cancelled)["state"] == "cancelled"


def test_a_stale_edit_starts_no_job(quiet: str) -> None:
    client = ui_client(UiState.load(quiet))
    fields = form_fields(client)
    assert fields["version"] == "1"
    assert followed(client, client.post("/api/objects", json={"yaml": _node("node-3"), "version": 1}))["state"] == "done"
    jobs, before = client.get("/api/jobs").json(), client.get("/api/scenario.yaml").text
    for answer in (client.post("/edit", data={**fields, "action": "apply", "yaml": _node("node-4")}),
                   client.post("/edit", data={**fields, "action": "delete", "kind": "Node", "name": "node-1"}),
                   client.post("/api/objects", json={"yaml": _node("node-4"), "version": 1}),
                   client.delete("/api/objects/Node/node-1", headers={"If-Match": '"1"'})):
        assert answer.status_code == 409
        assert "the scenario is at version 2, and this edit was made on version 1" in unescape(answer.text)
    assert client.get("/api/jobs").json() == jobs  # no job was started (the one before is all there is)
    assert client.get("/api/scenario.yaml").text == before


def test_an_edit_whose_scenario_changed_while_it_ran_fails_and_changes_nothing(quiet: str) -> None:
    # one job at a time: a slow what-if holds it while two edits of version 1 wait, both accepted
    state = UiState.load(quiet, Jobs(workers=1))
    client = ui_client(state)
    slow = client.post("/api/whatif", json={"apply": CHURN}).json()["id"]
    _progressing(client, slow)
    first = client.post("/api/objects", json={"yaml": _node("node-3"), "version": 1})
    second = client.post("/api/objects", json={"yaml": _node("node-4"), "version": 1})
    assert first.status_code == second.status_code == 202  # version 1 is still the version: both start
    assert client.delete(f"/api/jobs/{slow}").status_code == 200
    ended = [followed(client, first), followed(client, second)]
    # whichever ran first is swapped in; the other finds version 2 there, and fails saying so
    (done,) = [job for job in ended if job["state"] == "done"]
    (failed,) = [job for job in ended if job["state"] == "failed"]
    assert done["version"] == 2 and failed["version"] is None and failed["basedOn"] == 1
    assert failed["error"] == ("the scenario was changed by another edit while this one ran (it is at version 2 now, "
                               "and this edit was made on version 1); nothing was changed: apply it again")
    nodes = [o["name"] for o in client.get("/api/objects").json() if o["kind"] == "Node"]
    applied, lost = ("node-3", "node-4") if done["id"] == first.json()["id"] else ("node-4", "node-3")
    assert applied in nodes and lost not in nodes
    assert client.get("/api/result").headers[VERSION_HEADER] == "2"
    page = unescape(client.get(f"/jobs/{failed['id']}").text)
    assert 'id="job-error"' in page and "changed by another edit while this one ran" in page
    assert "Made on version 1 of the scenario" in page
    assert "(the scenario is now at version 2)" in client.get(f"/jobs/{done['id']}").text
    # the jobs list: the three, the newest first, the failed one with its error
    listed = unescape(client.get("/jobs").text)
    rows = re.findall(r'<tr data-job="(\d+)" data-state="(\w+)">', listed)
    assert rows == sorted([(str(slow), "cancelled"), (str(done["id"]), "done"), (str(failed["id"]), "failed")],
                          key=lambda r: -int(r[0]))
    assert "changed by another edit while this one ran" in listed
