"""The simulated kubelet: Topology Manager hints and policies, the CPU/memory/device managers, the
pod resources API. Pure unit tests on :class:`NodeAllocator`."""

from __future__ import annotations

import pytest

from kubesched.api.cpuset import format_cpuset, parse_cpuset
from kubesched.cluster.embedded.kubelet.managers import NodeAllocator, PodAssignment, Rejection
from kubesched.cluster.embedded.kubelet.podresources import ADDED, DELETED, PodResourcesServer, WatchEvent
from kubesched.topology.hints import TopologyHint, admits, merge_hints, resource_hints
from kubesched.topology.model import ZoneInput, build_spec
from kubesched.topology.qos import BEST_EFFORT, BURSTABLE, GUARANTEED, pinned_containers, pod_qos, pod_request

from .conftest import GPU, container, pod

GIB = 1024**3


def allocator(policy: str = "single-numa-node", scope: str = "container", cpus: int = 8, n: int = 2,
              gpus: int = 0, reserved: str = "", memory: int = 16 * GIB) -> NodeAllocator:
    devices = ((GPU, gpus),) if gpus else ()
    spec = build_spec([ZoneInput(cpus, memory, devices=devices) for _ in range(n)], policy=policy, scope=scope,
                      reserved_cpus=parse_cpuset(reserved))
    return NodeAllocator(spec)


def admit(a: NodeAllocator, obj: dict) -> PodAssignment:  # type: ignore[type-arg]
    plan = a.admit(pod_request(obj))
    assert isinstance(plan, PodAssignment), plan
    a.commit(plan)
    return plan


def uid(obj: dict, name: str) -> dict:  # type: ignore[type-arg]
    obj["metadata"]["uid"] = name
    return obj


# -- hints -------------------------------------------------------------------------------------------
def test_hint_is_preferred_only_for_the_narrowest_mask_that_could_ever_fit() -> None:
    total = {0: 8, 1: 8}
    assert resource_hints(4, total, {0: 8, 1: 8}) == [
        TopologyHint((0,), True), TopologyHint((1,), True), TopologyHint((0, 1), False)]
    # 10 CPUs never fit one zone: the two-zone mask is the preferred one
    assert resource_hints(10, total, {0: 8, 1: 8}) == [TopologyHint((0, 1), True)]
    # free 3 + 3: only the (not preferred) two-zone hint remains
    assert resource_hints(6, total, {0: 3, 1: 3}) == [TopologyHint((0, 1), False)]


@pytest.mark.parametrize("policy, admitted, affinity", [
    ("none", True, (0, 1)),
    ("best-effort", True, (0, 1)),
    ("restricted", False, (0, 1)),
    ("single-numa-node", False, None),
])
def test_policies_on_a_request_that_fits_the_node_but_no_single_zone(policy: str, admitted: bool, affinity: object) -> None:
    hints = [resource_hints(6, {0: 8, 1: 8}, {0: 3, 1: 3})]
    best = merge_hints(policy, hints, (0, 1))
    assert admits(policy, best) is admitted
    if policy != "none":
        assert best.affinity == affinity


def test_restricted_admits_a_request_whose_preferred_hint_spans_zones_single_numa_node_does_not() -> None:
    hints = [resource_hints(12, {0: 8, 1: 8}, {0: 8, 1: 8})]
    assert admits("restricted", merge_hints("restricted", hints, (0, 1)))
    assert not admits("single-numa-node", merge_hints("single-numa-node", hints, (0, 1)))


def test_merge_intersects_resources_and_keeps_the_narrowest_preferred() -> None:
    cpu = [TopologyHint((0,), True), TopologyHint((1,), True), TopologyHint((0, 1), False)]
    gpu = [TopologyHint((1,), True), TopologyHint((0, 1), False)]
    assert merge_hints("single-numa-node", [cpu, gpu], (0, 1)) == TopologyHint((1,), True)
    # a resource nobody can satisfy makes the result not preferred
    assert not merge_hints("restricted", [cpu, []], (0, 1)).preferred
    # "no preference" (None) does not constrain
    assert merge_hints("restricted", [cpu, None], (0, 1)) == TopologyHint((0,), True)


# -- QoS ------------------------------------------------------------------------------------------------
def test_qos_classes() -> None:
    assert pod_qos(pod("g", "2", "1Gi")) == GUARANTEED
    assert pod_qos(pod("b", "2", "1Gi", guaranteed=False)) == BURSTABLE
    assert pod_qos(pod("e", None, None)) == BEST_EFFORT
    mixed = pod("m", containers=[container("1", "1Gi"), container("1", "1Gi", guaranteed=False, name="side")])
    assert pod_qos(mixed) == BURSTABLE


# -- CPU manager (static) under single-numa-node -------------------------------------------------------
def test_pinned_containers_are_those_holding_exclusive_resources() -> None:
    """scheduler-plugins' PinnedContainers: sidecars then app containers with an exclusive request —
    for Guaranteed pods integral cpu, memory, hugepages; for any pod a device the node's object reports."""
    sidecar = {**container("1", name="side"), "restartPolicy": "Always"}
    guaranteed = pod("g", containers=[container("2", name="main"), container("500m", name="frac")],
                     init_containers=[container("4", name="setup"), sidecar])
    # every container's memory is pinned (frac's cpu is not exclusive); setup is done before the rest
    assert pinned_containers(pod_request(guaranteed), {"cpu", "memory"}) == ("side", "main", "frac")
    burstable = pod("b", containers=[container("2", gpu=1, guaranteed=False), container("2", name="plain", guaranteed=False)])
    assert pinned_containers(pod_request(burstable), {"cpu", "memory", GPU}) == ("main",)
    assert pinned_containers(pod_request(burstable), {"cpu", "memory"}) == ()  # a GPU no zone reports


def test_guaranteed_integral_cpus_are_exclusive_and_from_one_zone() -> None:
    a = allocator()
    first = admit(a, uid(pod("a", "6"), "a"))
    assert first.containers[0].cpus == (0, 1, 2, 3, 4, 5)
    second = admit(a, uid(pod("b", "6"), "b"))
    # zone 0 has 2 CPUs left: the whole request comes from zone 1, none from zone 0
    assert second.containers[0].cpus == tuple(range(8, 14))
    assert {a.spec.zone_of_cpu(c) for c in second.containers[0].cpus} == {1}
    assert format_cpuset(a.free_cpus()) == "6-7,14-15"


def test_request_that_fits_the_node_but_no_zone_is_rejected_with_topology_affinity_error() -> None:
    a = allocator()
    admit(a, uid(pod("a", "6"), "a"))
    admit(a, uid(pod("b", "6"), "b"))
    verdict = a.admit(pod_request(uid(pod("c", "3"), "c")))
    # the kubelet's rejectPod prefixes "Pod was rejected: " in the pod's status (the node agent's part)
    assert verdict == Rejection("TopologyAffinityError", "Resources cannot be allocated with Topology locality")
    assert format_cpuset(a.free_cpus()) == "6-7,14-15"  # nothing was taken


def test_best_effort_admits_and_spreads_restricted_rejects() -> None:
    for policy, expected in (("best-effort", (6, 7, 14)), ("restricted", None)):
        a = allocator(policy)
        admit(a, uid(pod("a", "6"), "a"))
        admit(a, uid(pod("b", "6"), "b"))
        verdict = a.admit(pod_request(uid(pod("c", "3"), "c")))
        if expected is None:
            assert isinstance(verdict, Rejection) and verdict.reason == "TopologyAffinityError"
        else:
            assert isinstance(verdict, PodAssignment) and verdict.containers[0].cpus == expected


def test_non_integral_and_burstable_cpus_come_from_the_shared_pool() -> None:
    a = allocator()
    fractional = admit(a, uid(pod("f", "1500m"), "f"))
    burstable = admit(a, uid(pod("b", "4", guaranteed=False), "b"))
    assert fractional.containers[0].cpus == () and burstable.containers[0].cpus == ()
    assert len(a.free_cpus()) == 16


def test_reserved_cpus_are_never_handed_out_but_count_for_preference() -> None:
    a = allocator(reserved="0")
    plan = admit(a, uid(pod("a", "7"), "a"))
    assert plan.containers[0].cpus == tuple(range(1, 8))
    # 8 CPUs fit one zone by capacity (preferred single zone), zone 1 still has all 8 free
    assert admit(a, uid(pod("b", "8"), "b")).containers[0].cpus == tuple(range(8, 16))


def test_container_scope_aligns_each_container_pod_scope_the_whole_pod() -> None:
    two = pod("p", containers=[container("5", name="one"), container("5", name="two")])
    per_container = admit(allocator(scope="container"), uid(two, "p"))
    assert [c.cpus for c in per_container.containers] == [tuple(range(0, 5)), tuple(range(8, 13))]
    # the pod needs 10 CPUs in one zone: rejected under scope pod
    assert isinstance(allocator(scope="pod").admit(pod_request(uid(two, "p"))), Rejection)
    small = pod("s", containers=[container("3", name="one"), container("3", name="two")])
    whole = admit(allocator(scope="pod"), uid(small, "s"))
    assert [c.cpus for c in whole.containers] == [(0, 1, 2), (3, 4, 5)] and whole.affinity == (0,)


def test_init_container_resources_are_reused_by_app_containers() -> None:
    obj = pod("i", containers=[container("6")], init_containers=[container("8", name="init")])
    plan = admit(allocator(), uid(obj, "i"))
    assert [c.name for c in plan.containers] == ["main"]
    assert plan.containers[0].cpus == tuple(range(0, 6))


def test_memory_manager_pins_guaranteed_memory_to_the_aligned_zone() -> None:
    a = allocator(memory=8 * GIB)
    plan = admit(a, uid(pod("m", "2", "6Gi"), "m"))
    assert plan.containers[0].memory == ((0, 6 * GIB),)
    # 6Gi more does not fit zone 0's remaining 2Gi: cpu and memory both go to zone 1
    plan = admit(a, uid(pod("n", "2", "6Gi"), "n"))
    assert plan.containers[0].memory == ((1, 6 * GIB),) and plan.containers[0].cpus == (8, 9)


def test_devices_are_aligned_with_cpus() -> None:
    a = allocator(gpus=2)
    admit(a, uid(pod("g1", "1", gpu=1), "g1"))
    plan = admit(a, uid(pod("g2", "1", gpu=2), "g2"))
    assert [(r, z) for r, _, z in plan.containers[0].devices] == [(GPU, 1), (GPU, 1)]
    assert plan.containers[0].cpus == (8,)
    # one GPU left in zone 0, none in zone 1: two GPUs cannot be aligned
    assert isinstance(a.admit(pod_request(uid(pod("g3", "1", gpu=2), "g3"))), Rejection)


def test_release_gives_everything_back() -> None:
    a = allocator(gpus=1)
    admit(a, uid(pod("x", "8", "4Gi", gpu=1), "x"))
    a.release("x")
    assert len(a.free_cpus()) == 16 and a.free_memory() == {0: 16 * GIB, 1: 16 * GIB}
    assert a.free_devices() == {GPU: {0: ("gpu0",), 1: ("gpu1",)}}


# -- the pod resources API ------------------------------------------------------------------------------
def test_pod_resources_list_allocatable_and_watch() -> None:
    a = allocator(gpus=1, reserved="0")
    server = PodResourcesServer(a, lambda: 5.0)
    seen: list[WatchEvent] = []
    cancel = server.watch(seen.append)
    plan = admit(a, uid(pod("web", "2", "1Gi", gpu=1), "web"))
    server.publish(ADDED, plan)
    [listed] = server.list()
    assert listed.key == "default/web"
    [c] = listed.containers
    assert c.cpu_ids == (1, 2)
    assert [(d.resource_name, d.device_ids, d.topology) for d in c.devices] == [(GPU, ("gpu0",), (0,))]
    assert [(m.memory_type, m.size, m.topology) for m in c.memory] == [("memory", GIB, (0,))]
    allocatable = server.get_allocatable_resources()
    assert allocatable.cpu_ids == tuple(range(1, 16))
    assert [(d.device_ids, d.topology) for d in allocatable.devices] == [(("gpu0",), (0,)), (("gpu1",), (1,))]
    server.publish(DELETED, a.release("web") or plan)
    assert [(e.action, e.time, e.pod.key) for e in seen] == [(ADDED, 5.0, "default/web"), (DELETED, 5.0, "default/web")]
    cancel()
    server.publish(ADDED, plan)
    assert len(seen) == 2
