"""Draining a node as kubectl drain does: cordon, kubectl's filters, evictions through the eviction
API that respect PodDisruptionBudgets (retried every 5 s on 429), and a report of what happened."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kubesched.sim import simulate
from kubesched.testkit.builders import make_deployment, make_node, make_pdb, make_pod
from kubesched.testkit.scenarios import scenario_document as scenario


def _run(tmp_path: Path, docs: list[Any], steps: list[dict[str, Any]], until: str = "5m") -> dict[str, Any]:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all([*docs, scenario(None, steps, until=until)]))
    return simulate(path).result


def _cluster() -> list[Any]:
    web = make_deployment("web", 3, make_pod("web", cpu="1", labels={"app": "web"}, grace=10))
    return [make_node("n1", cpu="4"), make_node("n2", cpu="4"), web,
            make_pdb("web", min_available=3, selector={"matchLabels": {"app": "web"}})]


def test_a_drain_waits_for_the_budget_and_reports_whom_it_blocked(tmp_path: Path) -> None:
    docs = _cluster()
    docs[-1] = make_pdb("web", min_available=2, selector={"matchLabels": {"app": "web"}})
    result = _run(tmp_path, docs, [{"at": "10s", "drain": {"node": "n1"}}])
    (drain,) = result["drains"]
    assert (drain["outcome"], drain["node"], drain["started"], drain["finished"]) == ("drained", "n1", 10.0, 25.0)
    # two web pods on n1: the first evicted at once (3 healthy, 2 needed); the second refused (429)
    # until the first one's replacement runs on n2, retried every 5 s, evicted at 15 s; each
    # terminates for its 10 s grace period
    first, second = sorted(drain["pods"], key=lambda p: p["evicted"])
    assert first["evicted"] == 10.0 and "blockedBy" not in first
    assert (second["evicted"], second["blockedBy"], second["blockedFor"]) == (15.0, "default/web", 5.0)
    nodes = {p["node"] for k, p in result["pods"].items() if k.startswith("default/web-") and p["phase"] == "Running"}
    assert nodes == {"n2"}
    assert any(e["reason"] == "Drained" and e["pod"] == "Node/n1" for e in result["events"])


def test_a_budget_that_never_allows_leaves_the_drain_blocked(tmp_path: Path) -> None:
    result = _run(tmp_path, _cluster(), [{"at": "10s", "drain": {"node": "n1"}}], until="2m")
    (drain,) = result["drains"]
    assert drain["outcome"] == "running" and all(p["evicted"] is None for p in drain["pods"])
    assert all(p["blockedBy"] == "default/web" and p["blockedFor"] == 110.0 for p in drain["pods"])
    assert not [e for e in result["events"] if e["reason"] in ("Terminating", "Deleted")]


def test_kubectls_filters_refuse_the_drain_before_anything_is_evicted(tmp_path: Path) -> None:
    bare = make_pod("bare", cpu="100m", node="n1")
    scratch = make_pod("scratch", cpu="100m", node="n1")
    scratch["spec"]["volumes"] = [{"name": "tmp", "emptyDir": {}}]
    scratch["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x",
                                               "uid": "u-x", "controller": True}]
    result = _run(tmp_path, [make_node("n1"), make_node("n2"), bare, scratch], [{"at": "1s", "drain": {"node": "n1"}}])
    (drain,) = result["drains"]
    assert drain["outcome"] == "failed"
    assert drain["refused"] == [
        "cannot delete Pods that declare no controller (use --force to override): default/bare",
        "cannot delete Pods with local storage (use --delete-emptydir-data to override): default/scratch"]
    assert result["pods"]["default/bare"]["phase"] == "Running"
    forced = _run(tmp_path, [make_node("n1"), make_node("n2"), bare, scratch],
                  [{"at": "1s", "drain": {"node": "n1", "force": True, "deleteEmptyDirData": True}}])
    assert forced["drains"][0]["outcome"] == "drained"
    assert forced["pods"]["default/bare"]["phase"] == "Deleted"  # nothing replaces an unmanaged pod
