"""A pod's page and API: its attempts with the scores the scheduler recorded, every Score plugin's
raw, normalised and weighted score on every feasible node now, the diagnosis at an earlier moment
and the per-node verdicts a page at a time: each equal to what the CLI prints with -o json."""

from __future__ import annotations

import json
from html import unescape
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from kubesched.cli.main import cli  # noqa: E402
from kubesched.testkit.dumps.cluster import ClusterDump  # noqa: E402
from kubesched.ui.app import NODES_PER_PAGE  # noqa: E402
from kubesched.ui.state import UiState  # noqa: E402

from .conftest import every_node, followed, ui_client  # noqa: E402

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo.yaml")


def _cli(*args: str) -> dict:
    out = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


@pytest.fixture(scope="module")
def demo() -> TestClient:
    return ui_client(UiState.load(DEMO))


@pytest.fixture(scope="module")
def placed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """An EKS dump whose one pending pod the run places at t=0, and nothing else happens after: the
    cluster at the end is the one that pod's attempt saw."""
    dump = ClusterDump()
    nodes = [n["metadata"]["name"] for n in dump.eks_nodegroup("general", 5)]
    dump.eks_nodegroup("spot", 2, taints=[{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}])
    dump.daemonset_pods("aws-node")
    dump.deployment("api", 4, [nodes[0], nodes[0], nodes[1], nodes[2]], namespace="shop", cpu="700m", memory="2Gi")
    dump.pod("report", "batch", node=None, cpu="500m", memory="1Gi")
    return dump.write(tmp_path_factory.mktemp("dump") / "cluster.yaml"), "batch/report"


def test_the_attempts_are_the_runs_with_normalised_and_weighted_scores(demo: TestClient) -> None:
    simulated = _cli("simulate", DEMO, "-o", "json", "--decisions")
    for key in ("default/canary", "default/quarterly-report"):
        recorded = [a for a in simulated["attempts"] if a["pod"] == key]
        shown = demo.get(f"/api/pods/{key}/attempts").json()
        assert [a["number"] for a in shown] == list(range(1, len(recorded) + 1))
        for attempt, mine in zip(recorded, shown):
            assert {k: mine[k] for k in attempt if k != "scores"} == {k: v for k, v in attempt.items() if k != "scores"}
            assert [(r["node"], r["total"]) for r in mine["scores"]] == [(r["node"], r["total"]) for r in attempt["scores"]]
            for row, theirs in zip(mine["scores"], attempt["scores"]):
                assert {p: c["weighted"] for p, c in row["plugins"].items()} == theirs["plugins"]
                assert {p: c["raw"] for p, c in row["plugins"].items()} == theirs["raw"]
                assert all(c["normalized"] * c["weight"] == c["weighted"] for c in row["plugins"].values())
    page = unescape(demo.get("/pods/default/canary?attempt=1").text)
    canary = [a for a in simulated["attempts"] if a["pod"] == "default/canary"][0]
    assert f"Attempt 1 at t={canary['time']:g}s: scheduled on {canary['node']}" in page
    best = canary["scores"][0]
    assert f"<td>{best['node']}</td>" in page and f"<strong>{best['total']}</strong>" in page
    cell = demo.get("/api/pods/default/canary/attempts").json()[0]["scores"][0]["plugins"]["NodeResourcesFit"]
    assert f"{cell['raw']} → {cell['normalized']} × {cell['weight']} = <strong>{cell['weighted']}</strong>" in page


def test_the_scores_now_are_the_ones_the_scheduler_placed_the_pod_by(placed: tuple[Path, str]) -> None:
    path, key = placed
    client = ui_client(UiState.load(str(path)))
    (attempt,) = [a for a in _cli("simulate", str(path), "-o", "json", "--decisions")["attempts"] if a["pod"] == key]
    assert attempt["outcome"] == "scheduled" and len(attempt["scores"]) == 7  # every node is feasible
    now = client.get(f"/api/pods/{key}/scores").json()
    assert now["at"]["endOfRun"] is True
    assert [(r["node"], r["total"], {p: c["weighted"] for p, c in r["plugins"].items()}) for r in now["nodes"]] == \
        [(r["node"], r["total"], r["plugins"]) for r in attempt["scores"]]
    # the raw scores the attempt recorded are the ones scoring the pod again gives
    assert [{p: c["raw"] for p, c in r["plugins"].items()} for r in now["nodes"]] == \
        [r["raw"] for r in attempt["scores"]]
    for row in now["nodes"]:
        fit = row["plugins"]["NodeResourcesFit"]
        assert fit["raw"] == fit["normalized"]  # LeastAllocated has no NormalizeScore
        taint = row["plugins"]["TaintToleration"]  # counts intolerable PreferNoSchedule taints, then reversed
        assert (taint["raw"], taint["normalized"]) == ((1, 0) if "spot" in _pools(client)[row["node"]] else (0, 100))
        assert all(c["normalized"] * c["weight"] == c["weighted"] for c in row["plugins"].values())
    page = unescape(client.get(f"/pods/{key}").text)
    first = now["nodes"][0]
    cell = first["plugins"]["TaintToleration"]
    assert f"{cell['raw']} → {cell['normalized']} × {cell['weight']} = <strong>{cell['weighted']}</strong>" in page


def _pools(client: TestClient) -> dict[str, str]:
    return {n["node"]: n["pool"] for n in every_node(client)}


def test_a_pod_at_an_earlier_moment_is_explain_at(demo: TestClient) -> None:
    first = followed(demo, demo.get("/api/pods/default/batch-vcrnf?at=70"))  # the run to t=70 is a job
    assert first["state"] == "done" and first["apiResult"] == "/api/pods/default/batch-vcrnf?at=70"
    assert demo.get("/api/pods/default/batch-vcrnf?at=70").json() == \
        _cli("explain", "default/batch-vcrnf", DEMO, "--at", "70s", "-o", "json")
    assert followed(demo, demo.get("/api/pods/default/batch-vcrnf?at=5"))["state"] == "done"
    early = demo.get("/api/pods/default/batch-vcrnf?at=5")
    assert early.status_code == 404
    out = CliRunner().invoke(cli, ["explain", "default/batch-vcrnf", DEMO, "--at", "5s"])
    assert early.json()["detail"] in out.output
    refused = demo.get("/api/pods/default/batch-vcrnf?at=-1")
    assert refused.status_code == 400 and "which ends at t=180s" in refused.json()["detail"]
    page = unescape(demo.get("/pods/default/batch-vcrnf?at=70").text)
    assert "at t=70s:" in page and "--at 70s -o json" in page


def test_a_thousand_node_verdict_list_comes_a_page_at_a_time(tmp_path: Path) -> None:
    dump = ClusterDump()
    dump.eks_nodegroup("general", NODES_PER_PAGE * 2 + 50)
    dump.pod("huge", "batch", node=None, cpu="64")
    path = dump.write(tmp_path / "big.json")
    client = ui_client(UiState.load(str(path)))
    explained = _cli("explain", "batch/huge", str(path), "-o", "json")
    pages = [client.get("/api/pods/batch/huge/nodes", params={"offset": offset, "limit": 100}).json()
             for offset in range(0, len(explained["nodes"]), 100)]
    assert {p["total"] for p in pages} == {len(explained["nodes"])}
    assert [v for p in pages for v in p["nodes"]] == explained["nodes"]
    one = explained["nodes"][123]["node"]
    assert client.get("/api/pods/batch/huge/nodes", params={"node": one}).json()["nodes"] == [explained["nodes"][123]]
    html = client.get("/pods/batch/huge?page=3").text
    assert "page 3 of 3" in html and html.count('class="verdict-row"') == 50
    assert f"{len(explained['nodes'])} nodes" in unescape(client.get("/pods/batch/huge").text)
