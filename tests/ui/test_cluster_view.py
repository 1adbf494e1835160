"""The cluster at size: ``GET /api/cluster`` sums the nodes by pool and zone on the server (no
per-node list), and the nodes come a page at a time from ``GET /api/cluster/nodes``, by pool, zone or
a search; every sum is that of the same nodes in ``kubesched simulate -o json``."""

from __future__ import annotations

import json
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from kubesched.api.quantity import format_quantity, resource_amount  # noqa: E402
from kubesched.cli.main import cli  # noqa: E402
from kubesched.testkit.dumps.cluster import ClusterDump  # noqa: E402
from kubesched.ui.state import UiState  # noqa: E402

from .conftest import every_node, pod_href, ui_client  # noqa: E402

GPU = "nvidia.com/gpu"
GPU_TAINT = {"key": GPU, "value": "true", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}


def _simulated(path: Path) -> dict[str, Any]:
    out = CliRunner().invoke(cli, ["simulate", str(path), "-o", "json"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


@pytest.fixture(scope="module")
def dump_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An EKS cluster of three node groups across three zones: a general one (one node NotReady and
    tainted so, one under memory pressure), a GPU one (tainted, 4 GPUs a node) and a cordoned spare
    one; workloads on them, trainers pending for the GPU group and a pod no node has room for."""
    dump = ClusterDump()
    general = dump.eks_nodegroup("general", 9)
    general[2]["status"]["conditions"][0].update(status="False", reason="KubeletNotReady", message="PLEG is not healthy")
    general[2]["spec"]["taints"] = [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]
    general[5]["status"]["conditions"].append({"type": "MemoryPressure", "status": "True",
                                               "reason": "KubeletHasInsufficientMemory", "message": "low"})
    gpu = dump.eks_nodegroup("gpu", 3, instance_type="g5.2xlarge", cpu="7910m", memory="30Gi",
                             taints=[GPU_TAINT], extended={GPU: "4"})
    dump.eks_nodegroup("spare", 2, unschedulable=True)
    dump.daemonset_pods("aws-node")
    dump.system_classes()
    names = [n["metadata"]["name"] for n in general]
    dump.deployment("api", 12, [names[i % 9] for i in range(12)], namespace="shop", cpu="500m", memory="1Gi")
    gpus = {"requests": {"cpu": "2", "memory": "8Gi", GPU: "1"}, "limits": {GPU: "1"}}
    dump.deployment("infer", 5, [gpu[i % 3]["metadata"]["name"] for i in range(5)], namespace="ml",
                    resources=gpus, template_extra={"tolerations": [GPU_TOLERATION]})
    dump.deployment("trainer", 2, [None, None], namespace="ml",
                    resources={"requests": {"cpu": "4", GPU: "8"}, "limits": {GPU: "8"}},
                    template_extra={"tolerations": [GPU_TOLERATION],
                                    "nodeSelector": {"eks.amazonaws.com/nodegroup": "gpu"}})
    dump.deployment("etl", 1, [None], namespace="batch", cpu="30")
    return dump.write(tmp_path_factory.mktemp("dump") / "cluster.json")


@pytest.fixture(scope="module")
def client(dump_path: Path) -> TestClient:
    return ui_client(UiState.load(str(dump_path)))


def _summed(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """The sums a pool's or a zone's summary should have, added up from ``simulate -o json``'s nodes."""
    out: dict[str, Any] = {"count": len(nodes), "pods": sum(n["pods"] for n in nodes),
                           "allocatablePods": sum(n["allocatablePods"] for n in nodes)}
    for resource in ("cpu", "memory"):
        requested, allocatable = (sum(resource_amount(resource, n[resource][side]) for n in nodes)
                                  for side in ("requested", "allocatable"))
        out[resource] = {"requested": format_quantity(resource, requested),
                         "allocatable": format_quantity(resource, allocatable)}
        out[f"{resource}Share"] = requested / allocatable
    return out


def test_the_pools_and_zones_are_the_sums_of_the_clis_nodes(client: TestClient, dump_path: Path) -> None:
    simulated = _simulated(dump_path)
    cluster = client.get("/api/cluster").json()
    assert cluster["summary"] == simulated["summary"] and cluster["nodes"] == len(simulated["nodes"]) == 14
    assert all("nodes" not in pool and all("nodes" not in z for z in pool["zones"]) for pool in cluster["pools"])
    assert [p["pool"] for p in cluster["pools"]] == ["general", "gpu", "spare"]
    listed = every_node(client)
    assert [n["node"] for n in listed] == [n["node"] for n in simulated["nodes"]]  # sorted by name, all there
    pool_of = {n["node"]: (n["pool"], n["zone"]) for n in listed}
    for pool in cluster["pools"]:
        mine = [n for n in simulated["nodes"] if pool_of[n["node"]][0] == pool["pool"]]
        assert {k: pool[k] for k in _summed(mine)} == _summed(mine), pool["pool"]
        assert sorted(z["zone"] for z in pool["zones"]) == sorted({pool_of[n["node"]][1] for n in mine})
        for zone in pool["zones"]:
            in_zone = [n for n in mine if pool_of[n["node"]][1] == zone["zone"]]
            assert {k: zone[k] for k in _summed(in_zone)} == _summed(in_zone), (pool["pool"], zone["zone"])
    general, gpu, spare = cluster["pools"]
    assert (general["tainted"], general["cordoned"], general["notReady"], general["pressure"]) == (1, 0, 1, 1)
    assert (gpu["tainted"], gpu["cordoned"], gpu["notReady"], gpu["pressure"]) == (3, 0, 0, 0)
    assert (spare["tainted"], spare["cordoned"], spare["notReady"], spare["pressure"]) == (2, 2, 0, 0)
    assert general["extended"] == {} and spare["extended"] == {}
    assert gpu["extended"] == {GPU: {"requested": "5", "allocatable": "12", "share": 5 / 12}}
    assert sum(z["extended"][GPU]["allocatable"] == "4" for z in gpu["zones"]) == 3
    # the trainers name the GPU group (a node selector); the etl pod names no node
    trainers = sorted(k for k in cluster["pending"] if k.startswith("ml/trainer-"))
    assert len(trainers) == 2 and len(cluster["pending"]) == 3
    assert (gpu["pendingNaming"], gpu["pendingNamed"]) == (2, trainers)
    assert general["pendingNaming"] == spare["pendingNaming"] == 0
    assert sum(z["pendingNaming"] for z in gpu["zones"]) == 6  # each zone has a GPU node they could go to


def test_a_pools_nodes_page_by_page_by_zone_and_found_by_name_or_label(client: TestClient, dump_path: Path) -> None:
    simulated = {n["node"]: n for n in _simulated(dump_path)["nodes"]}
    general = every_node(client, limit=4, pool="general")
    assert [n["node"] for n in general] == sorted(n["node"] for n in general) and len(general) == 9
    assert all({k: n[k] for k in simulated[n["node"]]} == simulated[n["node"]] for n in general)
    second = client.get("/api/cluster/nodes", params={"pool": "general", "offset": 4, "limit": 4}).json()
    assert (second["total"], [n["node"] for n in second["nodes"]]) == (9, [n["node"] for n in general[4:8]])
    past = client.get("/api/cluster/nodes", params={"pool": "general", "offset": 50}).json()
    assert (past["total"], past["nodes"]) == (9, [])
    zone_b = every_node(client, pool="general", zone="us-west-2b")
    assert [n["node"] for n in zone_b] == [n["node"] for n in general if n["zone"] == "us-west-2b"] != []
    assert every_node(client, zone="") == []  # every node has a zone label

    one = general[7]["node"]
    assert every_node(client, q=one.upper()) == [general[7]]  # any case, across the pools
    assert [n["pool"] for n in every_node(client, q="eks.amazonaws.com/nodegroup=gpu")] == ["gpu"] * 3
    assert every_node(client, q="no-such-node") == []
    assert client.get("/api/cluster/nodes", params={"limit": 5000}).status_code == 422

    node = client.get(f"/api/cluster/nodes/{one}").json()
    assert node["labels"]["eks.amazonaws.com/nodegroup"] == "general"
    simulated = _simulated(dump_path)
    on_it = sorted(k for k, p in simulated["pods"].items() if p["node"] == one and p["phase"] != "Deleted")
    assert [p["pod"] for p in node["podsOn"]] == on_it and len(on_it) == node["pods"]
    page = unescape(client.get(f"/nodes/{one}").text)
    assert all(f'href="{pod_href(simulated, key)}"' in page for key in on_it)
    missing = client.get("/api/cluster/nodes/nope")
    assert missing.status_code == 404 and missing.json()["detail"] == "no node nope in the cluster"
    assert client.get("/nodes/nope").status_code == 404


def test_the_page_shows_the_sums_and_leaves_the_nodes_to_the_api(client: TestClient) -> None:
    page = unescape(client.get("/").text)
    assert "14 nodes in 3 pools" in page
    assert 'data-pool="gpu" data-count="3"' in page and f"{GPU} 5 / 12" in page
    assert "2 pending pods name its nodes" in page and "1 NotReady" in page and "2 cordoned" in page
    assert "ip-10-0-0-10.us-west-2.compute.internal" not in page and 'class="node-row"' not in page


def test_without_javascript_the_nodes_are_pages_of_html(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lists the cluster page fills in with JavaScript are plain pages too: each pool and zone
    links to its nodes, the search is a form, and the pages link to each other."""
    import re

    import kubesched.ui.app as ui_app

    monkeypatch.setattr(ui_app, "CLUSTER_NODES_PAGE", 4)

    def listed(html: str) -> list[str]:
        return re.findall(r'class="node-link" href="/nodes/([^"]+)"', html)

    cluster = unescape(client.get("/").text)
    assert 'href="/nodes?pool=general"' in cluster and '<form id="node-search-form" action="/nodes"' in cluster
    assert 'href="/nodes?pool=general&zone=us-west-2b"' in cluster
    general = [n["node"] for n in every_node(client, pool="general")]
    first = unescape(client.get("/nodes", params={"pool": "general"}).text)
    assert listed(first) == general[:4] and "nodes 1–4 of 9" in first and 'id="prev-page"' not in first
    pages = [listed(first)]
    html = first
    while (more := re.search(r'id="next-page" href="([^"]+)"', html)) is not None:
        html = unescape(client.get(more.group(1)).text)
        pages.append(listed(html))
    assert pages == [general[:4], general[4:8], general[8:]] and 'id="prev-page"' in html
    zone_b = [n["node"] for n in every_node(client, pool="general", zone="us-west-2b")]
    assert listed(unescape(client.get("/nodes", params={"pool": "general", "zone": "us-west-2b"}).text)) == zone_b
    found = unescape(client.get("/nodes", params={"q": general[7].upper()}).text)
    assert listed(found) == [general[7]] and "nodes 1–1 of 1" in found
    assert "no nodes" in client.get("/nodes", params={"q": "no-such-node"}).text
