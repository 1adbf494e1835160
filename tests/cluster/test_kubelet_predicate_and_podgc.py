"""Pods written with spec.nodeName meet the kubelet, not the scheduler: the kubelet refuses those that
do not fit (OutOfcpu, ...), a pod bound to a node that does not exist stays Pending, and the pod
garbage collector deletes pods whose node is gone (their controllers replace them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kubesched.sim import simulate
from kubesched.testkit.builders import make_deployment, make_node, make_pod
from kubesched.testkit.scenarios import create_step, delete_step
from kubesched.testkit.scenarios import scenario_document as scenario


def _run(tmp_path: Path, *docs: Any, until: float | None = None) -> dict[str, Any]:
    path = tmp_path / "s.yaml"
    flat: list[Any] = []
    for d in docs:
        flat.extend(d if isinstance(d, list) else [d])
    path.write_text(yaml.safe_dump_all(flat))
    return simulate(path, until=until).result


def test_the_kubelet_refuses_a_pre_bound_pod_that_overcommits_its_node(tmp_path: Path) -> None:
    result = _run(tmp_path, make_node("n1", cpu="4", memory="8Gi"),
                  make_pod("first", cpu="3", memory="1Gi", node="n1"),
                  make_pod("greedy", cpu="64", memory="1Gi", node="n1"),
                  make_pod("small", cpu="1", memory="1Gi", node="n1"))
    pods = result["pods"]
    assert (pods["default/first"]["phase"], pods["default/small"]["phase"]) == ("Running", "Running")
    assert (pods["default/greedy"]["phase"], pods["default/greedy"]["reason"]) == ("Failed", "OutOfcpu")
    refused = [e for e in result["events"] if e["pod"] == "default/greedy" and e.get("phase") == "Failed"]
    assert refused == [{"time": 1.0, "reason": "OutOfcpu", "pod": "default/greedy", "node": "n1", "phase": "Failed",
                        "message": "Node didn't have enough resource: cpu, requested: 64000, used: 3000, capacity: 4000"}]


def test_the_kubelet_checks_node_affinity_of_a_pre_bound_pod(tmp_path: Path) -> None:
    pinned = make_pod("pinned", node="n1")
    pinned["spec"]["nodeSelector"] = {"disktype": "ssd"}
    result = _run(tmp_path, make_node("n1"), pinned)
    assert (result["pods"]["default/pinned"]["phase"], result["pods"]["default/pinned"]["reason"]) == (
        "Failed", "NodeAffinity")


def test_a_pod_bound_to_a_missing_node_stays_pending_until_the_pod_gc_deletes_it(tmp_path: Path) -> None:
    result = _run(tmp_path, make_node("n1"), make_pod("lost", node="no-such-node"))
    events = [(e["time"], e["reason"]) for e in result["events"] if e["pod"] == "default/lost"]
    # found at the 20 s pass, still missing after the 40 s quarantine: deleted at the 60 s pass
    assert events == [(0.0, "Created"), (60.0, "Deleted")]
    assert result["pods"]["default/lost"]["phase"] == "Deleted"


def test_pods_of_a_deleted_node_are_collected_and_replaced(tmp_path: Path) -> None:
    web = make_deployment("web", 2, make_pod("web", cpu="1"))
    result = _run(tmp_path, make_node("n1", cpu="2"), make_node("n2", cpu="2"), web,
                  scenario(None, [delete_step("30s", "Node", "n1")], until="3m"))
    gone = [e for e in result["events"] if e["reason"] == "Deleted" and e["pod"].startswith("default/web-")]
    # n1 deleted at 30 s; noticed at the 40 s pass, collected at the 80 s pass
    assert [e["time"] for e in gone] == [80.0]
    running = [p for k, p in result["pods"].items() if k.startswith("default/web-") and p["phase"] == "Running"]
    assert len(running) == 2 and {p["node"] for p in running} == {"n2"}


def test_a_node_registered_later_starts_the_pods_already_bound_to_it(tmp_path: Path) -> None:
    result = _run(tmp_path, make_node("n1"), make_pod("early", node="n2"),
                  scenario(None, [create_step("10s", make_node("n2"))], until="2m"))
    started = [e["time"] for e in result["events"] if e["pod"] == "default/early" and e["reason"] == "Started"]
    assert started == [10.0] and result["pods"]["default/early"]["phase"] == "Running"
