"""Filtering a window of nodes at a time (until the scan has found what it looks for) decides
exactly what filtering every node decides: the same nodes, scores, statuses, diagnoses, preemptions
and nominations, in simulations of a few hundred nodes with taints, cordoned nodes, zones, node
affinity, hard topology spreading, host ports, nominated pods, a node named by matchFields and pods
that fit nowhere."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from kubesched.scheduler import placement
from kubesched.sim import simulate
from kubesched.testkit.builders import (
    make_node,
    make_pod,
    make_priority_class,
    make_scheduler_config,
    make_taint,
)
from kubesched.testkit.runs import explained_json, node_of
from kubesched.testkit.scenarios import create_step, scenario_document

ZONES = ["z0", "z1", "z2", "z3", "z4"]
SHAPES = ["bare", "zone", "not-zone", "tolerates", "port", "big", "high", "named", "nowhere", "spread", "spread-honor"]


def spread_constraint(**extra: str) -> dict:
    return {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "spread"}}, **extra}


def pod_of(i: int, shape: str, zone: str, nodes: int) -> dict:
    name = f"p{i}"
    if shape == "zone":
        return make_pod(name, "500m", nodeSelector={"zone": zone})
    if shape == "not-zone":
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": [zone, "z0"]}]}]}}}
        return make_pod(name, "500m", affinity=affinity)
    if shape == "tolerates":
        return make_pod(name, "500m", tolerations=[{"key": "dedicated", "operator": "Exists"}])
    if shape == "port":
        return make_pod(name, "100m", containers=[{"name": "c", "image": "img", "ports": [
            {"containerPort": 80, "hostPort": 8080}], "resources": {"requests": {"cpu": "100m"}}}])
    if shape == "big":
        return make_pod(name, "3")
    if shape == "high":
        return make_pod(name, "3500m", priority_class="high")
    if shape == "named":
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [f"n{i * 7 % nodes}"]}]}]}}}
        return make_pod(name, "100m", affinity=affinity)
    if shape == "spread":  # hard spreading over zones (nodes without a zone do not pass)
        return make_pod(name, "250m", labels={"app": "spread"}, topologySpreadConstraints=[spread_constraint()])
    if shape == "spread-honor":  # counting only the nodes the pod may use: not z0, untainted
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z0"]}]}]}}}
        return make_pod(name, "250m", labels={"app": "spread"}, affinity=affinity,
                        topologySpreadConstraints=[spread_constraint(nodeTaintsPolicy="Honor")])
    if shape == "nowhere":
        return make_pod(name, "100m", nodeSelector={"zone": "nowhere"})
    return make_pod(name, "250m")


def scenario(nodes: int, tainted: int, cordoned: int, full: int, pods: list[tuple[str, str, int]],
             percentage: int) -> list[dict]:
    """``full``: every ``full``-th node holds a low-priority pod of 3 CPU (1: all of them)."""
    docs: list[dict] = [make_priority_class("high", 1000), make_priority_class("low", 0)]
    for i in range(nodes):
        taints = [make_taint("dedicated", "x", "NoSchedule")] if i % 11 < tainted else None
        labels = {} if i % 17 == 16 else {"zone": ZONES[i % len(ZONES)]}
        docs.append(make_node(f"n{i}", cpu="4", pods=20, labels=labels, taints=taints,
                              unschedulable=i % 13 < cordoned))
    for i in range(0, nodes, full or nodes + 1):  # nodes filled by low-priority pods: preemption's candidates
        docs.append(make_pod(f"low{i}", "3", priority_class="low", node=f"n{i}", grace=2))
        if i % 3 == 0:
            docs.append(make_pod(f"port{i}", "100m", node=f"n{(i + 1) % nodes}", containers=[
                {"name": "c", "image": "img", "ports": [{"containerPort": 80, "hostPort": 8080}],
                 "resources": {"requests": {"cpu": "100m"}}}]))
    steps = [create_step(at, pod_of(i, shape, zone, nodes)) for i, (shape, zone, at) in enumerate(pods)]
    profile = {"schedulerName": "default-scheduler"}
    config = make_scheduler_config(profile)
    config["percentageOfNodesToScore"] = percentage
    docs.append(scenario_document(steps=steps, until="60s", seed=5, name="windows", config=config))
    return docs


@seed(20261125)
@settings(max_examples=16, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(nodes=st.integers(230, 420), tainted=st.integers(0, 6), cordoned=st.integers(0, 3),
       full=st.sampled_from([0, 1, 1, 2, 7]), percentage=st.sampled_from([0, 5, 5, 30]),
       pods=st.lists(st.tuples(st.sampled_from(SHAPES), st.sampled_from(ZONES), st.integers(0, 20)),
                     min_size=1, max_size=40))
def test_windows_decide_what_all_nodes_decide(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nodes: int,
                                              tainted: int, cordoned: int, full: int, percentage: int,
                                              pods: list[tuple[str, str, int]]) -> None:
    assert_windows_equal(tmp_path, monkeypatch, scenario(nodes, tainted, cordoned, full, pods, percentage))


def test_windows_with_many_nominated_pods(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every node full of low-priority pods: preemptors nominate nodes inside and outside the
    windows later pods are filtered in, while their victims terminate."""
    pods = ([("high", "z0", t) for t in range(5)] + [("bare", "z1", t) for t in range(10)]
            + [("zone", "z2", 3)] * 5 + [("port", "z3", 4)] * 3)
    assert_windows_equal(tmp_path, monkeypatch, scenario(300, 2, 1, 1, pods, 5))


def assert_windows_equal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[dict]) -> None:
    import yaml

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    monkeypatch.setattr(placement, "MIN_FILTER_WINDOW", 10**9)  # one window: every node
    everything = explained_json(path)
    monkeypatch.setattr(placement, "MIN_FILTER_WINDOW", 1)  # windows from 2 * (to_find + 1) nodes
    windowed = placement.filter_in_windows

    def checked(fwk, state, pod, cache, order, to_find):  # type: ignore[no-untyped-def]
        """Every verdict of the windows equals the verdict filtering all nodes gives that node."""
        ok, fails, known = windowed(fwk, state, pod, cache, order, to_find)
        mask, first_fail, statuses = fwk.filter_all(state, pod, cache)
        seen = order[:len(ok)]
        assert ok.tolist() == mask[seen].tolist()
        assert fails[seen].tolist() == first_fail[seen].tolist()
        everywhere = statuses.as_dict()
        assert {j: st.message() for j, st in known.as_dict().items()} == {
            j: everywhere[j].message() for j in seen.tolist() if j in everywhere}
        return ok, fails, known

    monkeypatch.setattr(placement, "filter_in_windows", checked)
    assert explained_json(path) == everything


def nodes_filtered(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many nodes each filter pass of the run looks at (filled in as the run goes)."""
    from kubesched.scheduler.framework.runtime import Framework

    asked: list[int] = []
    original = Framework.filter_all

    def counting(self: Framework, state, pod, snapshot, where=None):  # type: ignore[no-untyped-def]
        asked.append(len(snapshot.node_infos) if where is None else len(where))
        return original(self, state, pod, snapshot, where)

    monkeypatch.setattr(Framework, "filter_all", counting)
    return asked


def test_a_big_cluster_is_filtered_in_windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The windows are used (not just equal): a pod that fits anywhere has its first window filtered
    (2000 nodes, 34 % to find: windows of 1362 nodes), not all 2000."""
    import yaml

    asked = nodes_filtered(monkeypatch)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all(scenario(2000, 0, 0, 0, [("bare", "z0", 0)], 0)))
    simulate(str(path))
    assert asked and max(asked) < 2000


def test_the_scan_stops_only_past_the_nodes_it_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exactly as many nodes pass in the first window as the scan looks for, one more much later:
    the scan must look on, or the next pod would start its scan elsewhere (here: the roomy node
    n300 is where the second pod goes only if the first scan stopped at the 100th node)."""
    import yaml

    docs: list[dict] = []
    for i in range(400):
        ok = i < 100 or i == 300
        docs.append(make_node(f"n{i}", cpu="64" if i == 300 else "4", labels={"ok": "yes" if ok else "no"}))
    steps = [create_step(at, make_pod(f"p{at}", "100m", nodeSelector={"ok": "yes"})) for at in (0, 1)]
    config = make_scheduler_config({"schedulerName": "default-scheduler"})
    config["percentageOfNodesToScore"] = 5  # 100 nodes to find
    docs.append(scenario_document(steps=steps, until="5s", seed=1, name="boundary", config=config))
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    monkeypatch.setattr(placement, "MIN_FILTER_WINDOW", 1)  # a first window of 202 nodes
    assert node_of(simulate(str(path)).result, "p1") == "n300"


def test_a_pod_that_fits_nowhere_is_filtered_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When no node fits, which filter failed each node first is known from the filter pass: the
    nodes are not filtered a second time to report them (each window once, then only the failing
    plugin's message is asked). The FailedScheduling message names every reason, as upstream's."""
    import yaml

    asked = nodes_filtered(monkeypatch)
    docs: list[dict] = [make_node(f"n{i}", cpu="2") for i in range(8)]
    docs += [make_node(f"t{i}", cpu="64", taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}])
             for i in range(2)]
    steps = [create_step(0, make_pod("big", "8"))]
    docs.append(scenario_document(steps=steps, until="1s", seed=1, name="nowhere"))
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    result = simulate(str(path))
    assert asked == [10]
    failed = [e["message"] for e in result.result["events"] if e["reason"] == "FailedScheduling"]
    assert failed == ["0/10 nodes are available: 2 node(s) had untolerated taint {gpu: yes}, 8 Insufficient cpu. "
                      "preemption: 0/10 nodes are available: 2 Preemption is not helpful for scheduling, "
                      "8 No preemption victims found for incoming pod.."]
