"""The what-if downloads, the timeline's counts and the cluster's zones and conditions, each held
against what the CLI writes for the same input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from kubesched.cli.main import cli  # noqa: E402
from kubesched.testkit.dumps.cluster import ClusterDump  # noqa: E402
from kubesched.ui.state import WHATIFS_KEPT, UiState  # noqa: E402

from .conftest import every_node, followed, form_fields, ui_client  # noqa: E402

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo.yaml")


def _invoke(*args: str) -> str:
    out = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return out.output


@pytest.fixture(scope="module")
def demo() -> TestClient:
    return ui_client(UiState.load(DEMO))


def test_a_whatifs_changed_scenario_and_report_are_the_clis_files(demo: TestClient, tmp_path: Path) -> None:
    answer = demo.post("/api/whatif", json={"drain": ["node-2"], "ignoreDaemonSets": True, "force": True,
                                            "priorityClass": ["app=web:payments"]})
    assert answer.status_code == 202
    job = followed(demo, answer)
    where = job["apiResult"]
    saved, report = tmp_path / "changed.yaml", tmp_path / "report.html"
    printed = _invoke("whatif", DEMO, "--drain", "node-2", "--ignore-daemonsets", "--force",
                      "--priority-class", "app=web:payments", "--save-changed", str(saved), "--report", str(report),
                      "-o", "json")
    diff = demo.get(where).json()
    assert diff == json.loads(printed)
    scenario = demo.get(where + "/scenario.yaml")
    assert scenario.headers["content-disposition"].startswith("attachment;")
    assert scenario.text == saved.read_text()
    assert demo.get(where + "/report.html").text == report.read_text()
    # the changed scenario is one the CLI loads: its simulation is the what-if's changed side
    changed = json.loads(_invoke("simulate", str(saved), "-o", "json"))["summary"]
    counts = ("scheduled", "pending", "preemptions", "victims")
    assert {k: changed[k] for k in counts} == {k: diff["summary"]["changed"][k] for k in counts}

    job = followed(demo, demo.post("/whatif", data={**form_fields(demo, "/whatif"), "drain": "node-2", "ignoreDaemonSets": "on", "force": "on"},
                                   follow_redirects=False))
    page = demo.get(job["result"])
    link = page.text.split('id="whatif-scenario" href="')[1].split('"')[0]
    assert demo.get(link).status_code == 200 and "kind: Scenario" in demo.get(link).text
    for _ in range(WHATIFS_KEPT):
        assert followed(demo, demo.post("/api/whatif", json={"cordon": ["node-1"]}))["state"] == "done"
    gone = demo.get(where + "/scenario.yaml")
    assert gone.status_code == 404 and "run it again" in gone.json()["detail"]


def test_the_timeline_counts_pending_running_and_terminating_pods(demo: TestClient) -> None:
    result = json.loads(_invoke("simulate", DEMO, "-o", "json"))
    timeline = demo.get("/api/timeline").json()
    assert timeline["events"] == result["events"]

    def at(series: list[list[float]], t: float) -> float:
        return max((point for point in series if point[0] <= t), default=[0, 0])[1]

    # a pod is terminating from its Terminating event until it is gone, and not running meanwhile
    terminating = {e["pod"]: e["time"] for e in result["events"] if e["reason"] == "Terminating"}
    assert terminating
    for pod, since in terminating.items():
        gone = next(e["time"] for e in result["events"] if e["pod"] == pod and e["reason"] in ("Deleted", "Evicted"))
        if gone > since:
            assert at(timeline["terminating"], since) >= 1
    end = result["endTime"]
    assert at(timeline["pending"], end) == result["summary"]["pending"]
    assert at(timeline["terminating"], end) == 0
    assert at(timeline["running"], end) == sum(1 for p in result["pods"].values() if p["phase"] == "Running")
    assert 'id="terminating-count"' in demo.get("/timeline").text


def test_the_cluster_by_pool_and_zone_with_conditions(tmp_path: Path) -> None:
    dump = ClusterDump()
    nodes = dump.eks_nodegroup("general", 6)
    nodes[4]["status"]["conditions"].append({"type": "MemoryPressure", "status": "True", "reason": "KubeletHasInsufficientMemory",
                                             "message": "kubelet has insufficient memory available"})
    dump.deployment("api", 3, [n["metadata"]["name"] for n in nodes[:3]], namespace="shop", cpu="1")
    path = dump.write(tmp_path / "cluster.yaml")
    client = ui_client(UiState.load(str(path)))
    simulated = json.loads(_invoke("simulate", str(path), "-o", "json"))
    (pool,) = client.get("/api/cluster").json()["pools"]
    by_zone = {z["zone"]: z for z in pool["zones"]}
    assert sorted(by_zone) == ["us-west-2a", "us-west-2b", "us-west-2c"]
    nodes_ = every_node(client, pool=pool["pool"])
    for zone, entry in by_zone.items():
        mine = [n for n in nodes_ if n["zone"] == zone]
        assert entry["count"] == len(mine) == 2
        assert entry["pods"] == sum(n["pods"] for n in mine)
    assert sum(z["pods"] for z in pool["zones"]) == sum(n["pods"] for n in simulated["nodes"])
    pressured = next(n for n in nodes_ if n["node"] == nodes[4]["metadata"]["name"])
    assert pressured["conditions"] == ["MemoryPressure"] and pool["pressure"] == 1
    assert all(n["conditions"] == [] for n in nodes_ if n is not pressured)
    assert "1 under pressure" in client.get("/").text  # the pool's count; the node's condition on its page
    assert "MemoryPressure" in client.get(f"/nodes/{pressured['node']}").text
