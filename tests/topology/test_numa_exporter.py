"""The compact topology form, NodeResourceTopology objects as the exporter writes them, poll vs watch
timing, adoption of user-written objects, validation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.errors import ManifestError
from kubesched.api.loader import load_scenario
from kubesched.cluster.embedded.kubelet.machine import spec_from_nrt
from kubesched.sim import Simulation
from kubesched.testkit.builders import make_nrt, make_nrt_zone
from kubesched.testkit.runs import phase, run_docs
from kubesched.testkit.scenarios import create_step, delete_step, write_scenario
from kubesched.topology.nrt import PodData, parse_nrt, placement_of, pods_fingerprint
from kubesched.topology.qos import pinned_containers, pod_request

from .conftest import GPU, container, node, pod, rejections, scenario, topology, zones

Obj = dict[str, Any]
Simulate = Callable[..., Obj]


def simulation(tmp_path: Path, docs: list[Obj], until: float | None = None) -> Simulation:
    return run_docs(tmp_path, docs, until=until).sim


def stored(sim: Simulation, name: str = "n1") -> Obj:
    obj = sim.cluster.api.get("NodeResourceTopology", None, name)
    assert obj is not None
    return obj


def available(sim: Simulation, resource: str = "cpu", name: str = "n1") -> list[str]:
    return [r["available"] for z in stored(sim, name)["zones"] for r in z["resources"] if r["name"] == resource]


def test_object_content(tmp_path: Path) -> None:
    zone_list = [{"cpus": 8, "memory": "16Gi", "reservedMemory": "1Gi", "devices": {GPU: 1}},
                 {"cpus": 8, "memory": "16Gi", "devices": {GPU: 1}, "distances": [21, 10]}]
    topo = topology(zone_list=zone_list, reservedSystemCPUs="0", exporter={"mode": "Watch"})
    sim = simulation(tmp_path, scenario([node("n1", gpus=2), pod("a", "2", "2Gi", gpu=1, node="n1")], topo=topo))
    obj = stored(sim)
    assert obj["apiVersion"] == "topology.node.k8s.io/v1alpha2"
    assert obj["topologyPolicies"] == ["SingleNUMANodeContainerLevel"]
    attrs = {a["name"]: a["value"] for a in obj["attributes"]}
    assert attrs == {"topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "container",
                     "nodeTopologyPodsFingerprint": pods_fingerprint(["default/a"]),
                     "nodeTopologyPodsFingerprintMethod": "all",
                     # one container placed, in zone 0, the busiest: no zone carries a vector
                     "topology.node.k8s.io/numaplacement-metadata": "npv0v001::ve=leb89::cc=1::nn=2::bn=0"}
    zone0, zone1 = obj["zones"]
    assert zone0["name"] == "node-0" and zone0["type"] == "Node"
    assert zone0["resources"] == [
        {"name": "cpu", "capacity": "8", "allocatable": "7", "available": "5"},
        {"name": "memory", "capacity": "16Gi", "allocatable": "15Gi", "available": "13Gi"},
        {"name": GPU, "capacity": "1", "allocatable": "1", "available": "0"},
    ]
    assert zone0["costs"] == [{"name": "node-0", "value": 10}, {"name": "node-1", "value": 20}]
    assert zone1["costs"] == [{"name": "node-0", "value": 21}, {"name": "node-1", "value": 10}]
    assert "attributes" not in zone0 and "attributes" not in zone1
    assert parse_nrt(obj).zones[0].available == {"cpu": 5000, "memory": 13 * 1024**3, GPU: 0}


def test_each_container_holding_exclusive_resources_is_published_in_its_zone(tmp_path: Path) -> None:
    """The numaplacement attributes, decoded the way the scheduler does (with the containers of the
    node's pods that hold exclusive resources), give every such container the zone the kubelet put
    it in: exclusive CPUs, else a device, else pinned memory."""
    objs = [node("n1", gpus=2),
            pod("a", "6", node="n1"),                                                     # CPUs 0-5
            pod("b", "6", node="n1"),                                                     # CPUs 8-13
            pod("c", containers=[container("1", name="one"), container("1", name="two")], node="n1"),
            pod("gpu", "1", gpu=1, guaranteed=False, node="n1"),                         # a device only
            pod("mem", "500m", "2Gi", node="n1"),                                         # pinned memory only
            pod("shared", "1", guaranteed=False, node="n1")]                              # nothing exclusive
    topo = topology(zone_list=zones(gpus=1), exporter={"mode": "Watch"})
    obj = stored(simulation(tmp_path, scenario(objs, topo=topo)))
    view = parse_nrt(obj)
    pods = [PodData("default", p["metadata"]["name"], pinned_containers(pod_request(p), view.resource_names))
            for p in objs[1:]]
    placement = placement_of(view, pods)
    assert placement is not None and len(placement) == 6
    found = {f"{p.name}/{c}": placement.zone_of("default", p.name, c) for p in pods for c in ("main", "one", "two")}
    assert {k: v for k, v in found.items() if v is not None} == {
        "a/main": 0, "b/main": 1, "c/one": 0, "c/two": 0, "gpu/main": 0, "mem/main": 0}
    # zone 0 holds five of the six containers: the busiest, written in the metadata, without a vector
    attrs = {a["name"]: a["value"] for a in obj["attributes"]}
    assert attrs["topology.node.k8s.io/numaplacement-metadata"] == "npv0v001::ve=leb89::cc=6::nn=2::bn=0"
    assert "attributes" not in obj["zones"][0]
    assert [a["name"] for a in obj["zones"][1]["attributes"]] == ["topology.node.k8s.io/numaplacement-vector"]
    # the same object read with a pod the exporter does not know: six containers claimed, seven known
    extra = PodData("default", "late", ("main",))
    assert placement_of(view, [*pods, extra]) is None


@pytest.mark.parametrize("policy, exporter", [("restricted", {"mode": "Watch"}),
                                              ("single-numa-node", {"mode": "Watch", "podPlacement": False})])
def test_no_placement_unless_single_numa_node_and_asked_for(tmp_path: Path, policy: str, exporter: Obj) -> None:
    objs = [node("n1"), pod("a", "2", node="n1")]
    obj = stored(simulation(tmp_path, scenario(objs, topo=topology(policy, exporter=exporter))))
    names = [a["name"] for a in obj["attributes"]] + [a["name"] for z in obj["zones"] for a in z.get("attributes", [])]
    assert not [n for n in names if "numaplacement" in n]


def test_pods_running_at_time_zero_are_published_at_time_zero_even_when_polling(tmp_path: Path) -> None:
    topo = topology(exporter={"mode": "Poll", "interval": "60s"})
    sim = simulation(tmp_path, scenario([node("n1"), pod("a", "6", node="n1")], topo=topo), until=1.0)
    assert available(sim) == ["2", "8"]


def test_poll_publishes_on_the_grid_watch_on_change(tmp_path: Path) -> None:
    steps = [create_step("1s", pod("a", "6"))]
    poll = topology(exporter={"mode": "Poll", "interval": "10s"})
    assert available(simulation(tmp_path, scenario([node("n1")], topo=poll, steps=steps), until=9.0)) == ["8", "8"]
    assert available(simulation(tmp_path, scenario([node("n1")], topo=poll, steps=steps), until=10.0)) == ["2", "8"]
    watch = topology(exporter={"mode": "Watch"})
    assert available(simulation(tmp_path, scenario([node("n1")], topo=watch, steps=steps), until=1.0)) == ["2", "8"]
    delayed = topology(exporter={"mode": "Watch", "delay": "3s"})
    assert available(simulation(tmp_path, scenario([node("n1")], topo=delayed, steps=steps), until=3.5)) == ["8", "8"]
    sim = simulation(tmp_path, scenario([node("n1")], topo=delayed, steps=steps), until=4.0)
    assert available(sim) == ["2", "8"]
    report = sim.cluster.subsystem_reports()["topology"]
    assert report["exporter"] == {"mode": "Watch", "updates": 2, "listCalls": 2, "delay": 3.0}
    assert report["admitted"] == 1 and report["rejected"] == {}
    assert report["nodes"][0]["zones"][0] == {"name": "node-0", "freeCPUs": "6-7", "freeMemory": "15Gi"}


def test_released_resources_come_back(tmp_path: Path) -> None:
    objs = [node("n1"), pod("a", "6", node="n1", annotations={"kubesched.io/run-for": "5s"})]
    sim = simulation(tmp_path, scenario(objs, topo=topology(exporter={"mode": "Watch"})), until=6.0)
    assert available(sim) == ["8", "8"]
    assert stored(sim)["attributes"][2]["value"] == pods_fingerprint([])


def test_entries_match_nodes_by_selector_and_name(tmp_path: Path) -> None:
    section = {"nodes": [
        {"nodeNames": ["named"], "topologyManagerPolicy": "restricted", "zones": zones()},
        {"nodeSelector": {"matchLabels": {"numa": "yes"}}, "zones": zones(1, cpus=16)},
    ]}
    objs = [node("named"), node("labelled", labels={"numa": "yes"}), node("plain")]
    sim = simulation(tmp_path, scenario(objs, topo=section))
    assert len(stored(sim, "named")["zones"]) == 2
    assert [a["value"] for a in stored(sim, "named")["attributes"][:1]] == ["restricted"]
    assert len(stored(sim, "labelled")["zones"]) == 1
    assert sim.cluster.api.get("NodeResourceTopology", None, "plain") is None


def test_deleting_a_node_deletes_its_object(tmp_path: Path) -> None:
    docs = scenario([node("n1")], topo=topology(), until="2s")
    docs[0]["spec"]["steps"] = [delete_step("1s", "Node", "n1")]
    sim = simulation(tmp_path, docs)
    assert sim.cluster.api.get("NodeResourceTopology", None, "n1") is None


# -- NodeResourceTopology objects written by the user ---------------------------------------------------------
USER_NRT = make_nrt("n1", [make_nrt_zone(0, {"cpu": "8", "memory": "16Gi"}, {"cpu": "7", "memory": "16Gi"}),
                      make_nrt_zone(1, {"cpu": "8", "memory": "16Gi"})])


def test_spec_from_a_user_object() -> None:
    user = dict(USER_NRT)
    user["zones"] = [dict(z) for z in USER_NRT["zones"]]
    for z in user["zones"]:
        z["resources"] = [{**r, "capacity": "8"} if r["name"] == "cpu" else r for r in z["resources"]]
    spec = spec_from_nrt(user)
    assert spec is not None
    assert spec.policy == "single-numa-node"
    assert [z.cpus for z in spec.zones] == [tuple(range(8)), tuple(range(8, 16))]
    assert spec.zones[0].reserved_cpus == (0,) and spec.zones[1].reserved_cpus == ()


@pytest.mark.parametrize("adopt, c_phase", [(True, "Failed"), (False, "Running")])
def test_user_objects_are_simulated_when_adopted(simulate: Simulate, adopt: bool, c_phase: str) -> None:
    objs = [USER_NRT, node("n1"), pod("a", "6", node="n1"), pod("b", "6", node="n1"),
            pod("c", "3", node="n1")]
    result = simulate(scenario(objs, topo={"adoptNodeResourceTopologies": adopt}))
    assert phase(result, "c") == c_phase
    assert len(rejections(result)) == (1 if adopt else 0)


# -- validation ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("section, path, message", [
    ({"bogus": 1}, "spec.cluster.topology.bogus", "unknown field"),
    ({"exporter": {"mode": "Push"}}, "spec.cluster.topology.exporter.mode", 'unsupported value "Push"'),
    ({"exporter": {"interval": "0s"}}, "spec.cluster.topology.exporter.interval", "greater than 0"),
    ({"nodes": [{"zones": []}]}, "spec.cluster.topology.nodes[0].zones", "at least one zone"),
    ({"nodes": [{"zones": [{"memory": "1Gi"}]}]}, "spec.cluster.topology.nodes[0].zones[0].cpus", "required"),
    ({"nodes": [{"topologyManagerPolicy": "strict", "zones": zones()}]},
     "spec.cluster.topology.nodes[0].topologyManagerPolicy", "unsupported value"),
    ({"nodes": [{"reservedSystemCPUs": "0-20", "zones": zones()}]},
     "spec.cluster.topology.nodes[0].reservedSystemCPUs", "CPU 20 does not exist"),
    ({"nodes": [{"zones": [{"cpus": 2, "memory": "12x"}]}]},
     "spec.cluster.topology.nodes[0].zones[0].memory", "invalid quantity"),
    ({"nodes": [{"zones": [{"cpus": 2, "devices": {"gpu": 1}}]}]},
     "spec.cluster.topology.nodes[0].zones[0].devices.gpu", "extended resource"),
    ({"nodes": [{"zones": [{"cpus": 2, "distances": [10, 20]}]}]},
     "spec.cluster.topology.nodes[0].zones[0].distances", "one cost per zone"),
])
def test_invalid_sections_are_refused_with_the_field_path(tmp_path: Path, section: Obj, path: str, message: str) -> None:
    file = write_scenario(tmp_path, scenario([node("n1")], topo=section))
    with pytest.raises(ManifestError) as err:
        load_scenario(str(file))
    text = str(err.value)
    assert path in text and message in text


def test_fingerprint_is_the_podfingerprint_v001_format() -> None:
    from kubesched.topology.fingerprint import fingerprint

    pods = ["production/jaeger-dpgjk", "production/nginx-rt684", "production/envoy-g9m22"]
    # the value the podfingerprint library's compatibility data gives for these three pods
    assert pods_fingerprint(pods) == "pfp0v001607b76a0e9d3aeb4"
    assert pods_fingerprint(reversed(pods)) == pods_fingerprint(pods)
    assert fingerprint([]) == pods_fingerprint([])
