"""The ui over a kubectl dump of an EKS cluster, as ``kubesched ui cluster.yaml`` serves one: nodes by
managed node group, a pending pod's verdicts and a drain of an EKS-named node, each the CLI's."""

from __future__ import annotations

import json
from html import unescape
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")

from kubesched.cli.main import cli  # noqa: E402
from kubesched.testkit.dumps.cluster import small_eks_cluster  # noqa: E402
from kubesched.ui.state import UiState  # noqa: E402

from .conftest import every_node, job_result, pod_href, ui_client  # noqa: E402


def _cli(*args: str) -> dict:
    out = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


@pytest.fixture(scope="module")
def dump_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dump, _ = small_eks_cluster()
    return dump.write(tmp_path_factory.mktemp("dump") / "cluster.yaml")


def test_an_eks_dump_by_node_group_with_its_pending_pod_and_a_drain(dump_path: Path) -> None:
    client = ui_client(UiState.load(str(dump_path)))
    simulated = _cli("simulate", str(dump_path), "-o", "json")
    cluster = client.get("/api/cluster").json()
    assert [(p["pool"], p["label"], p["count"]) for p in cluster["pools"]] == [
        ("general", "eks.amazonaws.com/nodegroup", 3), ("gpu", "eks.amazonaws.com/nodegroup", 1)]
    by_node = {n["node"]: n for n in every_node(client)}
    assert [{k: by_node[n["node"]][k] for k in n} for n in simulated["nodes"]] == simulated["nodes"]

    (pending,) = cluster["pending"]
    assert pending.startswith("batch/etl-")
    page = unescape(client.get("/").text)
    first = "ip-10-0-0-10.us-west-2.compute.internal"
    assert f'href="{pod_href(client.get("/api/result").json(), pending)}"' in page and first not in page  # the pools' sums; their nodes on request
    (found,) = client.get("/api/cluster/nodes", params={"q": "IP-10-0-0-10.us"}).json()["nodes"]
    assert found == by_node[first] and found["pool"] == "general"
    assert first in client.get(f"/nodes/{first}").text
    explained = _cli("explain", pending, str(dump_path), "-o", "json")
    assert client.get(f"/api/pods/{pending}").json() == explained
    assert explained["upstreamMessage"] in unescape(client.get(f"/pods/{pending}").text)

    node = every_node(client, pool=cluster["pools"][0]["pool"])[0]["node"]
    diff = client.post("/api/whatif", json={"drain": [node], "ignoreDaemonSets": True, "force": True})
    assert job_result(client, diff) == _cli("whatif", str(dump_path), "--drain", node, "--ignore-daemonsets", "--force", "-o", "json")
