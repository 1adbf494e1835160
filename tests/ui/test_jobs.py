"""Simulations in the ui run as jobs: a what-if's job answers the CLI's diff; pages answer while a job
runs; a cancelled job ends cancelled and changes nothing; ``?at`` past the run's end is refused;
SIGTERM and Ctrl-C stop ``kubesched ui`` and its workers.

The slow job is made slow by its input, not by waiting: a cluster simulated to t=1 000 000 s where
nothing happens (the ui's own run is quick) and, applied by the what-if or the edit, a ReplicaSet of
20 pods that each succeed 100 ms after they start and are replaced at once, a few hundred
scheduling cycles per simulated second, for days on this machine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from html import unescape
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from kubesched.cli.main import cli  # noqa: E402
from kubesched.ui.state import UiState  # noqa: E402

from .conftest import followed, form_fields, job_result, ui_client  # noqa: E402

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo.yaml")
QUIET = """\
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {name: churn}
spec: {until: 1000000}
---
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node-2, labels: {kubernetes.io/hostname: node-2}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
"""
CHURN = """\
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: churn, namespace: default}
spec:
  replicas: 20
  selector: {matchLabels: {app: churn}}
  template:
    metadata:
      labels: {app: churn}
      annotations: {kubesched.io/run-for: 100ms}
    spec:
      containers: [{name: c, image: i, resources: {requests: {cpu: 100m}}}]
"""
#: a generous bound for what is polled (a busy machine is slow, never this slow)
PATIENCE = 120


@pytest.fixture()
def quiet(tmp_path: Path) -> str:
    path = tmp_path / "quiet.yaml"
    path.write_text(QUIET)
    return str(path)


def _running(client: TestClient, job_id: int) -> dict:
    """The job once it runs and has reported progress (simulated time past 0)."""
    deadline = time.monotonic() + PATIENCE
    while True:
        job = client.get(f"/api/jobs/{job_id}").json()
        assert job["state"] in ("queued", "running"), job
        if job["state"] == "running" and job["progress"].get("now", 0) > 0:
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.05)


def test_a_whatif_job_answers_the_clis_diff(tmp_path: Path) -> None:
    client = ui_client(UiState.load(DEMO))
    answer = client.post("/api/whatif", json={"cordon": ["node-2"], "preemption": False})
    assert answer.status_code == 202 and answer.headers["location"] == f"/api/jobs/{answer.json()['id']}"
    said = CliRunner().invoke(cli, ["whatif", DEMO, "--cordon", "node-2", "--disable-preemption", "-o", "json"])
    assert said.exit_code == 0, said.output
    assert job_result(client, answer) == json.loads(said.output)
    job = client.get(answer.headers["location"]).json()
    assert job["state"] == "done" and job["progress"]["fraction"] == 1.0 and job["result"].startswith("/whatif?run=")
    # its phases, in order: the scenario pickled for the worker (the first job of the run; later
    # ones find it pickled), read
    # there, the simulation set up, run, and its answer sent back; a finished job is in none
    assert [name for name, _ in job["phases"]] == ["preparing", "reading", "setting up", "running", "finishing"]
    assert [t for _, t in job["phases"]] == sorted(t for _, t in job["phases"])
    assert job["phase"] is None and job["phaseText"] == ""
    page = unescape(client.get(f"/jobs/{job['id']}").text)
    assert 'id="job-result"' in page and f'url={job["result"]}' in page  # the done page leads to the diff


def test_pages_answer_while_a_whatif_runs_and_a_cancelled_one_changes_nothing(quiet: str) -> None:
    state = UiState.load(quiet)
    client = ui_client(state)
    before = client.get("/api/result").json()
    started = client.post("/whatif", data={**form_fields(client, "/whatif"), "apply": CHURN}, follow_redirects=False)
    assert started.status_code == 303
    job_id = int(started.headers["location"].rsplit("/", 1)[1])
    running = _running(client, job_id)
    assert running["title"] == "what-if: apply 1 object" and running["progress"]["end"] == 1_000_000
    # the pages of the run shown answer while the job runs (it cannot finish for days)
    assert client.get("/").status_code == 200
    assert client.get("/api/cluster").json()["nodes"] == 2
    assert client.get("/nodes/node-1").status_code == 200
    page = client.get(f"/jobs/{job_id}").text
    assert '<meta http-equiv="refresh"' in page and 'id="job-bar"' in page and 'id="cancel-job"' in page
    assert 'data-state="running"' in page and "simulated t=" in page
    assert running["phase"] == "running" and running["phaseText"].startswith("running ")
    assert [name for name, _ in running["phases"]] == ["preparing", "reading", "setting up", "running"]
    assert 'data-phase="running"' in page and '<ol id="job-phases"' in page
    cancelled = client.post(f"/jobs/{job_id}/cancel", data=form_fields(client, f"/jobs/{job_id}"),
                            follow_redirects=False)
    assert cancelled.status_code == 303
    job = followed(client, cancelled)
    assert job["state"] == "cancelled" and job["result"] is None
    assert client.get("/api/result").json() == before and not state.whatifs
    assert 'id="job-cancelled"' in client.get(f"/jobs/{job_id}").text


def test_a_cancelled_edit_changes_nothing(quiet: str) -> None:
    client = ui_client(UiState.load(quiet))
    before, objects = client.get("/api/result").json(), client.get("/api/objects").json()
    answer = client.post("/api/objects", json={"yaml": CHURN})
    assert answer.status_code == 202
    running = _running(client, answer.json()["id"])
    assert [name for name, _ in running["phases"]] == ["setting up", "running"]  # on the server's thread
    assert client.get("/").status_code == 200  # the run shown is still the one before the edit
    assert client.delete(f"/api/jobs/{answer.json()['id']}").status_code == 200
    job = followed(client, answer)
    assert job["state"] == "cancelled"
    assert client.get("/api/result").json() == before and client.get("/api/objects").json() == objects


@pytest.mark.parametrize("at", ["181", "1e12", "-1", "nan", "inf"])
def test_a_moment_outside_the_run_is_refused_at_once(at: str) -> None:
    client = ui_client(UiState.load(DEMO))
    answer = client.get("/api/pods/default/batch-vcrnf", params={"at": at})
    assert answer.status_code == 400
    assert "not a moment of the run, which ends at t=180s" in answer.json()["detail"]
    page = client.get("/pods/default/batch-vcrnf", params={"at": at})
    assert page.status_code == 400 and "which ends at t=180s" in unescape(page.text)
    assert client.get("/api/jobs").json() == []  # nothing was started


def _children(pid: int) -> set[int]:
    """Every process under ``pid`` (read from /proc)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = {int(k) for k in (task / "children").read_text().split()}
            except OSError:
                continue
            todo += kids - found
            found |= kids
    return found


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status  # a zombie has exited


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads the processes from /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_server_and_its_workers(quiet: str, sig: signal.Signals) -> None:
    command = [sys.executable, "-c", "from kubesched.cli.main import cli; cli()", "ui", quiet, "--port", "0"]
    server = subprocess.Popen(command,  # as `kubesched ui QUIET --port 0`
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert " at http://" in line, line
        url = line.split(" at ", 1)[1].split()[0].rstrip("/")
        deadline = time.monotonic() + PATIENCE
        while True:  # the address is printed just before the server listens
            try:
                urllib.request.urlopen(url + "/api/jobs").close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        request = urllib.request.Request(url + "/api/whatif", data=json.dumps({"apply": CHURN}).encode(),
                                         headers={"content-type": "application/json"})
        with urllib.request.urlopen(request) as answer:
            assert answer.status == 202
            where = answer.headers["location"]
        deadline = time.monotonic() + PATIENCE
        while True:  # the job runs in a worker process
            with urllib.request.urlopen(url + where) as answer:
                job = json.load(answer)
            if job["state"] == "running" and job["progress"].get("now", 0) > 0:
                break
            assert job["state"] in ("queued", "running") and time.monotonic() < deadline, job
            time.sleep(0.1)
        workers = _children(server.pid)
        assert workers and all(_alive(p) for p in workers)
        server.send_signal(sig)
        server.wait(timeout=PATIENCE)
        deadline = time.monotonic() + PATIENCE
        while any(_alive(p) for p in workers):
            assert time.monotonic() < deadline, [p for p in workers if _alive(p)]
            time.sleep(0.1)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
