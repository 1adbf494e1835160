"""A live cluster, read once through a kubeconfig (GET requests only), as the base of `kubesched ui`,
`kubesched sweep` and `kubesched plan`: each answers as it does for the same cluster dumped to a
file by `kubesched snapshot`, and says (or records) where the cluster came from."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from fakeapi import FakeApiServer

from kubesched.cli.main import cli
from kubesched.testkit.dumps.cluster import small_eks_cluster

#: the dump's file is named as the live cluster's scenario is, so that the results name the same scenario
LIVE_NAME = "live-cluster.yaml"


def _eks_cluster(fake: FakeApiServer) -> list[str]:
    """An EKS cluster as the API server holds it (managed node groups, DaemonSet pods, Deployments
    with their ReplicaSets, one pod pending); the general group's node names."""
    dump, general = small_eks_cluster()
    for namespace in ("shop", "batch"):
        fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    for obj in sorted(dump.items(with_workloads=True), key=lambda o: o["kind"] != "PriorityClass"):  # admission
        fake.create(obj)
    return general


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _dumped(kubeconfig: str, directory: Path) -> Path:
    """The same cluster as a file, as `kubesched snapshot` writes it."""
    path = directory / LIVE_NAME
    out = _invoke("snapshot", "--kubeconfig", kubeconfig, "-o", str(path))
    assert out.exit_code == 0, out.output
    return path


# -- kubesched ui --kubeconfig ------------------------------------------------------------------------
pytest.importorskip("fastapi")
import uvicorn  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from kubesched.ui.app import create_app  # noqa: E402
from kubesched.ui.jobs import Jobs  # noqa: E402
from kubesched.ui.state import UiState  # noqa: E402


def test_ui_serves_a_live_cluster_read_once_as_it_serves_its_dump(fake: FakeApiServer, kubeconfig: str,
                                                                  tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    general = _eks_cluster(fake)
    served: list[Any] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, *a, **k: served.append(self.config))
    # the command stops its jobs once the server returns (here at once): kept going, to ask the app after
    stopped: list[Jobs] = []
    monkeypatch.setattr(Jobs, "shutdown", lambda self: stopped.append(self))
    out = _invoke("ui", "--kubeconfig", kubeconfig, "--port", "8765")
    assert out.exit_code == 0, out.output
    assert len(stopped) == 1
    assert f"live-cluster from live cluster (kubeconfig {kubeconfig}, context fake), read at" in out.output
    (config,) = served
    live = TestClient(config.app, base_url="http://127.0.0.1:8765")  # a Host the ui answers to
    assert {r.method for r in fake.requests} == {"GET"}  # read-only
    read = len(fake.requests)
    paths = ("/api/result", "/api/cluster", "/api/timeline", "/api/objects")
    answers = {path: live.get(path).json() for path in paths}
    (pending,) = answers["/api/cluster"]["pending"]
    assert pending.startswith("batch/etl-")
    diagnosis = live.get(f"/api/pods/{pending}").json()
    drain = {"drain": [general[0]], "ignoreDaemonSets": True, "force": True}
    diff = _job_result(live, live.post("/api/whatif", json=drain))
    page = live.get("/").text
    assert f'id="source">from live cluster (kubeconfig {kubeconfig}, context fake), read at ' in page
    assert len(fake.requests) == read  # read once, at start: the pages serve what was read then

    dumped = TestClient(create_app(UiState.load(str(_dumped(kubeconfig, tmp_path)))), base_url="http://127.0.0.1")
    for path in paths:
        assert answers[path] == dumped.get(path).json(), path
    assert diagnosis == dumped.get(f"/api/pods/{pending}").json()
    assert diff == _job_result(dumped, dumped.post("/api/whatif", json=drain))


def _job_result(client: TestClient, started: Any) -> Any:
    """The result of the job a what-if started (202), once it is done."""
    assert started.status_code == 202, started.text
    deadline = time.monotonic() + 300
    while (job := client.get(started.headers["location"]).json())["state"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.05)
    assert job["state"] == "done", job
    return client.get(job["apiResult"]).json()


def test_ui_refuses_a_scenario_and_a_kubeconfig_together_and_a_context_the_file_has_not(
        kubeconfig: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, *a, **k: pytest.fail("served"))
    both = CliRunner().invoke(cli, ["ui", kubeconfig, "--kubeconfig", kubeconfig])
    assert both.exit_code == 2 and "give either SCENARIO or --kubeconfig, not both" in both.output
    neither = CliRunner().invoke(cli, ["ui"])
    assert neither.exit_code == 2 and "or --kubeconfig" in neither.output
    nope = CliRunner().invoke(cli, ["ui", "--kubeconfig", kubeconfig, "--context", "nope"])
    assert nope.exit_code == 2 and "Traceback" not in nope.output
    assert nope.output.startswith(f"error: cannot use {kubeconfig}: ") and "nope" in nope.output


# -- kubesched sweep / plan --kubeconfig --------------------------------------------------------------
def _spec_file(path: Path, kind: str, **spec: Any) -> Path:
    path.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": kind, "metadata": {"name": "t"},
                                    "spec": spec}))
    return path


def _without_timings(document: dict[str, Any]) -> dict[str, Any]:
    return {**document, "variants": [{k: v for k, v in r.items() if k != "seconds"} for r in document["variants"]]}


def test_a_sweep_of_a_live_cluster_is_the_sweep_of_its_dump(fake: FakeApiServer, kubeconfig: str,
                                                           tmp_path: Path) -> None:
    general = _eks_cluster(fake)
    axes = {"seeds": [1, 2], "nodePool": {"selector": {"matchLabels": {"eks.amazonaws.com/nodegroup": "general"}},
                                          "counts": [3, 4]},
            "changes": {"as-is": {}, "drain": {"drain": [general[0]], "ignoreDaemonSets": True, "force": True}}}
    live_file = _spec_file(tmp_path / "live.yaml", "Sweep", **axes)  # no base: the command line gives it
    live = _invoke("sweep", str(live_file), "--kubeconfig", kubeconfig, "--workers", "1",
                   "--out", str(tmp_path / "live"), "-o", "json")
    assert live.exit_code == 0, live.output
    assert {r.method for r in fake.requests} == {"GET"}
    assert len(fake.requests_matching("GET", "^/api/v1/nodes")) == 1  # read once, then sent to the worker

    dump = _dumped(kubeconfig, tmp_path)
    from_file = _invoke("sweep", str(_spec_file(tmp_path / "file.yaml", "Sweep", base=str(dump), **axes)), "--local",
                        "--out", str(tmp_path / "file"), "-o", "json")
    assert from_file.exit_code == 0, from_file.output
    live_doc, file_doc = json.loads(live.output), json.loads(from_file.output)
    assert live_doc["base"] == {"kubeconfig": kubeconfig, "context": "fake"}
    assert file_doc["base"] == {"file": str(dump)}
    assert len(live_doc["variants"]) == 8 and not any(r["error"] for r in live_doc["variants"])
    assert {**_without_timings(live_doc), "base": None} == {**_without_timings(file_doc), "base": None}
    for result in sorted((tmp_path / "file" / "results").iterdir()):
        assert (tmp_path / "live" / "results" / result.name).read_text() == result.read_text(), result.name

    table = _invoke("sweep", str(live_file), "--kubeconfig", kubeconfig, "--local", "--out", str(tmp_path / "live"))
    assert table.exit_code == 0, table.output
    assert f"base: live cluster (kubeconfig {kubeconfig}, context fake)" in table.output
    report = tmp_path / "report.html"
    _invoke("sweep", str(live_file), "--kubeconfig", kubeconfig, "--local", "--out", str(tmp_path / "live"),
            "--report", str(report))
    assert f"configurations of live cluster (kubeconfig {kubeconfig}, context fake)" in report.read_text()


def test_a_plan_of_a_live_cluster_is_the_plan_of_its_dump(fake: FakeApiServer, kubeconfig: str,
                                                         tmp_path: Path) -> None:
    _eks_cluster(fake)
    spec = {"seeds": [1], "goals": ["pending == 0"],
            "nodePool": {"selector": {"matchLabels": {"eks.amazonaws.com/nodegroup": "general"}}, "min": 3, "max": 6}}
    live = _invoke("plan", str(_spec_file(tmp_path / "live.yaml", "Plan", **spec)), "--kubeconfig", kubeconfig,
                   "--context", "fake", "--local", "-o", "json")
    assert live.exit_code == 0, live.output
    dump = _dumped(kubeconfig, tmp_path)
    from_file = _invoke("plan", str(_spec_file(tmp_path / "file.yaml", "Plan", base=str(dump), **spec)), "--local",
                        "-o", "json")
    assert from_file.exit_code == 0, from_file.output
    live_doc, file_doc = json.loads(live.output), json.loads(from_file.output)
    assert live_doc["base"] == {"kubeconfig": kubeconfig, "context": "fake"} and file_doc["base"] == {"file": str(dump)}
    assert {**live_doc, "base": None} == {**file_doc, "base": None}
    assert live_doc["answer"] == 4  # a fourth general node takes the pending etl pod


def test_the_kubeconfig_replaces_the_files_base(fake: FakeApiServer, kubeconfig: str, tmp_path: Path) -> None:
    _eks_cluster(fake)
    sweep = _spec_file(tmp_path / "s.yaml", "Sweep", base="no-such-file.yaml")  # not read: replaced
    out = _invoke("sweep", str(sweep), "--kubeconfig", kubeconfig, "--local", "-o", "json")
    assert out.exit_code == 0, out.output
    document = json.loads(out.output)
    assert document["base"] == {"kubeconfig": kubeconfig, "context": "fake"}
    assert document["variants"][0]["metrics"]["pending"] == 1
