"""NodeResourceTopologyMatch on hand-written NodeResourceTopology objects: Filter per policy and
scope, every score strategy against hand-computed values, the reservation-aware views, args."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler.framework.interface import Code, CycleState
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.noderesourcetopology import NodeResourceTopologyMatch
from kubesched.scheduler.plugins.noderesourcetopology.alignment import EvictionImpossible, post_eviction
from kubesched.scheduler.plugins.registry import DEFAULT_MULTIPOINT, plugin_registry
from kubesched.testkit.builders import make_nrt, make_nrt_zone
from kubesched.testkit.framework import FakeHandle
from kubesched.topology.nrt import PodData, parse_nrt, placement_of, pods_fingerprint
from kubesched.topology.numaplacement import Placement
from kubesched.topology.qos import pinned_containers, pod_request
from kubesched.topology.scoring import (
    balanced_allocation,
    least_allocated,
    most_allocated,
    normalize_numa_score,
)

from .conftest import GPU, PLUGIN, container, node, pod

Obj = dict[str, Any]


def info(obj: Obj) -> PodInfo:
    obj["metadata"].setdefault("uid", obj["metadata"]["name"])
    return PodInfo.from_pod(obj)


def node_info(name: str = "n1", cpu: str = "16", gpus: int = 0, pods: list[Obj] | None = None) -> NodeInfo:
    ni = NodeInfo.from_node(node(name, cpu, gpus=gpus))
    for p in pods or []:
        p["spec"]["nodeName"] = name
        ni.add_pod(info(p))
    return ni


def plugin(objects: list[Obj], args: Obj | None = None, nodes: list[NodeInfo] | None = None
           ) -> tuple[NodeResourceTopologyMatch, FakeHandle]:
    handle = FakeHandle(nodes, objects={"NodeResourceTopology": objects})
    return NodeResourceTopologyMatch(args or {}, handle), handle


def run_filter(pl: NodeResourceTopologyMatch, p: Obj, ni: NodeInfo) -> str | None:
    state = CycleState()
    pi = info(p)
    pl.pre_filter(state, pi)
    status = pl.filter(state, pi, ni)
    if status is None:
        return None
    assert status.code == Code.UNSCHEDULABLE
    return status.message()


def run_score(pl: NodeResourceTopologyMatch, p: Obj, ni: NodeInfo) -> int:
    state = CycleState()
    pi = info(p)
    pl.pre_filter(state, pi)
    return pl.score(state, pi, ni)


TWO_BY_THREE = [make_nrt_zone(0, {"cpu": "3", "memory": "8Gi"}), make_nrt_zone(1, {"cpu": "3", "memory": "8Gi"})]


# -- registry -------------------------------------------------------------------------------------------
def test_registered_but_not_in_the_default_profile() -> None:
    assert PLUGIN in plugin_registry()
    assert PLUGIN not in {name for name, _ in DEFAULT_MULTIPOINT}


@pytest.mark.parametrize("args, error", [
    ({"scoringStrategy": {"type": "Mostly"}}, "scoringStrategy.type"),
    ({"cacheResyncPeriodSeconds": -1}, "cacheResyncPeriodSeconds"),
    ({"cache": {"resyncMethod": "Sometimes"}}, "cache.resyncMethod"),
    ({"preemptionMode": "Maybe"}, "preemptionMode"),
    ({"cacheResyncMode": "Never"}, "cacheResyncMode"),
    ({"scoringStrategy": {"resources": [{"name": "cpu", "weight": 101}]}}, "weight"),
    ({"bogus": 1}, "unknown field"),
])
def test_invalid_args_are_refused(args: Obj, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        NodeResourceTopologyMatch(args, FakeHandle())


# -- Filter -----------------------------------------------------------------------------------------------
def test_request_fitting_the_node_but_no_zone_is_filtered_out() -> None:
    pl, _ = plugin([make_nrt("n1", TWO_BY_THREE)])
    assert run_filter(pl, pod("p", "5"), node_info()) == "cannot align container"
    assert run_filter(pl, pod("q", "3"), node_info()) is None


def test_non_guaranteed_cpu_and_memory_are_not_aligned_but_devices_are() -> None:
    zones = [make_nrt_zone(0, {"cpu": "3", "memory": "8Gi", GPU: "1"}), make_nrt_zone(1, {"cpu": "3", "memory": "8Gi", GPU: "1"})]
    pl, _ = plugin([make_nrt("n1", zones)])
    ni = node_info(gpus=4)
    assert run_filter(pl, pod("burstable", "5", guaranteed=False), ni) is None
    assert run_filter(pl, pod("besteffort", None, None), ni) is None
    assert run_filter(pl, pod("gpus", "1", gpu=2, guaranteed=False), ni) == "cannot align container"
    assert run_filter(pl, pod("gpu", "1", gpu=1, guaranteed=False), ni) is None


def test_only_single_numa_node_is_filtered_and_nodes_without_object_pass() -> None:
    for policy in ("none", "best-effort", "restricted"):
        pl, _ = plugin([make_nrt("n1", TWO_BY_THREE, policy=policy)])
        assert run_filter(pl, pod("p", "5"), node_info()) is None
    pl, _ = plugin([])
    assert run_filter(pl, pod("p", "5"), node_info()) is None


def test_container_scope_charges_each_container_pod_scope_checks_the_sum() -> None:
    zones = [make_nrt_zone(0, {"cpu": "4", "memory": "8Gi"}), make_nrt_zone(1, {"cpu": "4", "memory": "8Gi"})]
    two = pod("two", containers=[container("3", name="a"), container("3", name="b")])
    pl, _ = plugin([make_nrt("n1", zones, scope="container")])
    assert run_filter(pl, two, node_info()) is None
    three = pod("three", containers=[container("3", name=c) for c in "abc"])
    assert run_filter(pl, three, node_info()) == "cannot align container"
    pl, _ = plugin([make_nrt("n1", zones, scope="pod")])
    assert run_filter(pl, two, node_info()) == "cannot align pod"
    init = pod("init", containers=[container("1")], init_containers=[container("5", name="setup")])
    pl, _ = plugin([make_nrt("n1", zones)])
    assert run_filter(pl, init, node_info()) == "cannot align init container"


def test_resource_missing_at_node_level_fails_extended_resource_without_zones_passes() -> None:
    pl, _ = plugin([make_nrt("n1", TWO_BY_THREE)])
    assert run_filter(pl, pod("gpu", "1", gpu=1), node_info(gpus=0)) == "cannot align container"
    assert run_filter(pl, pod("gpu", "1", gpu=1), node_info(gpus=2)) is None


# -- Score: hand-computed ---------------------------------------------------------------------------------
ZONES_A = [make_nrt_zone(0, {"cpu": "4", "memory": "8Gi"}), make_nrt_zone(1, {"cpu": "8", "memory": "16Gi"})]


@pytest.mark.parametrize("strategy, expected", [
    # zone 0: cpu (4-2)/4 -> 50, memory (8-4)/8 -> 50 => 50; zone 1: 75, 75 => 75; node = min non-zero
    ("LeastAllocated", 50),
    # zone 0: 2/4 -> 50, 4/8 -> 50 => 50; zone 1: 25, 25 => 25
    ("MostAllocated", 25),
    # both zones: equal fractions, variance 0
    ("BalancedAllocation", 100),
    # one zone is enough: 100 - 1 * (100 // 8) + (100 // 8) // 2 = 94
    ("LeastNUMANodes", 94),
])
def test_pod_scope_scores(strategy: str, expected: int) -> None:
    pl, _ = plugin([make_nrt("n1", ZONES_A, scope="pod")], {"scoringStrategy": {"type": strategy}})
    assert run_score(pl, pod("p", "2", "4Gi"), node_info()) == expected


def test_weights_and_cpu_rounding() -> None:
    zones = [make_nrt_zone(0, {"cpu": "4", "memory": "16Gi"})]
    args = {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 3},
                                                                         {"name": "memory", "weight": 1}]}}
    pl, _ = plugin([make_nrt("n1", zones, scope="pod")], args)
    # cpu (4-2)/4 -> 50 (1500m counts as 2 cores), memory (16-4)/16 -> 75: (3*50 + 75) // 4 = 56
    assert run_score(pl, pod("p", "1500m", "4Gi"), node_info()) == 56


def test_balanced_allocation_uses_the_sample_variance() -> None:
    zones = [make_nrt_zone(0, {"cpu": "4", "memory": "16Gi"}), make_nrt_zone(1, {"cpu": "2", "memory": "4Gi"})]
    pl, _ = plugin([make_nrt("n1", zones, scope="pod")], {"scoringStrategy": {"type": "BalancedAllocation"}})
    # zone 0: fractions .5 and .25, sample variance 2 * .125^2 / 1 = .03125 -> 96; zone 1: 1 and 1 -> 100
    assert run_score(pl, pod("p", "2", "4Gi"), node_info()) == 96


def test_container_scope_averages_containers() -> None:
    pl, _ = plugin([make_nrt("n1", ZONES_A)], {"scoringStrategy": {"type": "LeastAllocated"}})
    p = pod("p", containers=[container("2", "4Gi", name="a"), container("4", "4Gi", name="b")])
    # a: min(50, 75) = 50; b: zone 0 cpu 0 + memory 50 -> 25, zone 1 cpu 50 + memory 75 -> 62 => 25
    assert run_score(pl, p, node_info()) == (50 + 25) // 2


def test_least_numa_nodes_counts_zones_and_distance() -> None:
    costs0, costs1 = {0: 10, 1: 21}, {0: 21, 1: 10}
    zones = [make_nrt_zone(0, {"cpu": "8", "memory": "8Gi"}, costs=costs0), make_nrt_zone(1, {"cpu": "8", "memory": "8Gi"}, costs=costs1)]
    pl, _ = plugin([make_nrt("n1", zones, scope="pod", policy="best-effort")], {"scoringStrategy": {"type": "LeastNUMANodes"}})
    assert run_score(pl, pod("one", "6", "4Gi"), node_info()) == 100 - 12 + 6
    assert run_score(pl, pod("two", "10", "4Gi"), node_info()) == 100 - 24 + 6
    assert normalize_numa_score(2, False, 4) == 50


def test_score_edge_cases() -> None:
    pl, _ = plugin([make_nrt("n1", ZONES_A, policy="restricted")])
    assert run_score(pl, pod("p", "2", "4Gi"), node_info()) == 0  # not single-numa-node
    assert run_score(pl, pod("b", "2", "4Gi", guaranteed=False), node_info()) == 100
    pl, _ = plugin([])
    assert run_score(pl, pod("p", "2", "4Gi"), node_info()) == 0


def test_strategy_functions_directly() -> None:
    weights = {"cpu": 1, "memory": 1}
    request = {"cpu": 2000, "memory": 4}
    assert least_allocated(request, {"cpu": 1000, "memory": 8}, weights) == (0 + 50) // 2  # cpu does not fit
    assert most_allocated(request, {"memory": 8}, weights) == (0 + 50) // 2  # zone lacks cpu
    assert balanced_allocation(request, {"cpu": 1000, "memory": 8}, weights) == 0  # fraction > 1


# -- the reservation-aware views ----------------------------------------------------------------------------
EIGHT_EIGHT = [make_nrt_zone(0, {"cpu": "8", "memory": "16Gi"}), make_nrt_zone(1, {"cpu": "8", "memory": "16Gi"})]
AFTER_A = [make_nrt_zone(0, {"cpu": "2", "memory": "15Gi"}, {"cpu": "8", "memory": "16Gi"}),
           make_nrt_zone(1, {"cpu": "8", "memory": "16Gi"})]


def place(pl: NodeResourceTopologyMatch, handle: FakeHandle, p: Obj, ni: NodeInfo) -> None:
    state = CycleState()
    pi = info(p)
    pl.pre_filter(state, pi)
    assert pl.filter(state, pi, ni) is None
    assert pl.reserve(state, pi, ni.name) is None
    p["spec"]["nodeName"] = ni.name
    ni.add_pod(info(p))


def test_passthrough_double_counts_pods_placed_since_the_last_update() -> None:
    ni = node_info()
    pl, handle = plugin([make_nrt("n1", EIGHT_EIGHT)], nodes=[ni])
    place(pl, handle, pod("a", "6"), ni)
    # the object still says 8 + 8 free: a second 6-CPU pod passes; so does a third, which the kubelet
    # will reject (only 2 + 2 are left once the second one is placed)
    assert run_filter(pl, pod("b", "6"), ni) is None
    place(pl, handle, pod("b", "6"), ni)
    assert run_filter(pl, pod("c", "6"), ni) is None


@pytest.mark.parametrize("args", [{"cacheResyncPeriodSeconds": 5}, {"cacheResyncMode": "OnUpdate"}])
def test_overreserve_subtracts_reserved_pods_from_every_zone_until_the_object_catches_up(args: Obj) -> None:
    ni = node_info()
    pl, handle = plugin([make_nrt("n1", EIGHT_EIGHT, fingerprint=pods_fingerprint([]))], args, nodes=[ni])
    place(pl, handle, pod("a", "6"), ni)
    assert run_filter(pl, pod("b", "6"), ni) == "cannot align container"  # 2 + 2 (pessimistic)
    # the exporter publishes a's allocation
    handle.objects["NodeResourceTopology"] = [make_nrt("n1", AFTER_A, fingerprint=pods_fingerprint(["default/a"]), rv="2")]
    if "cacheResyncPeriodSeconds" in args:
        assert run_filter(pl, pod("b", "6"), ni) == "cannot align container"  # no resync before t=5
        handle.time = 5.0
    assert run_filter(pl, pod("b", "6"), ni) is None


def test_overreserve_does_not_flush_while_the_object_misses_a_pod() -> None:
    ni = node_info()
    pl, handle = plugin([make_nrt("n1", EIGHT_EIGHT, fingerprint=pods_fingerprint([]))], {"cacheResyncMode": "OnUpdate"},
                        nodes=[ni])
    place(pl, handle, pod("a", "6"), ni)
    place_b = pod("b", "2")
    place(pl, handle, place_b, ni)
    handle.objects["NodeResourceTopology"] = [make_nrt("n1", AFTER_A, fingerprint=pods_fingerprint(["default/a"]), rv="2")]
    # b is not in the object yet: a and b both still count against every zone (8-6-2 = 0)
    assert run_filter(pl, pod("c", "1"), ni) == "cannot align container"


def test_discard_reserved_skips_nodes_between_reserve_and_post_bind() -> None:
    ni = node_info()
    pl, handle = plugin([make_nrt("n1", EIGHT_EIGHT)], {"discardReservedNodes": True}, nodes=[ni])
    state = CycleState()
    a = info(pod("a", "2"))
    pl.pre_filter(state, a)
    pl.reserve(state, a, "n1")
    assert run_filter(pl, pod("b", "1"), ni) == "invalid node topology data"
    pl.post_bind(state, a, "n1")
    assert run_filter(pl, pod("b", "1"), ni) is None


# -- preemption dry run ---------------------------------------------------------------------------------------
VICTIM_ZONES = [make_nrt_zone(0, {"cpu": "1", "memory": "10Gi"}, {"cpu": "8", "memory": "16Gi"}),
                make_nrt_zone(1, {"cpu": "4", "memory": "16Gi"}, {"cpu": "8", "memory": "16Gi"})]


def placed(placement: dict[str, int], pods: list[Obj]) -> Placement:
    """What the scheduler decodes from an object placing ``placement``, knowing ``pods``."""
    view = parse_nrt(make_nrt("n1", VICTIM_ZONES, placement=placement))
    data = [PodData("default", p["metadata"]["name"], pinned_containers(pod_request(p), view.resource_names))
            for p in pods]
    found = placement_of(view, data)
    assert found is not None
    return found


def test_post_eviction_gives_victims_exclusive_resources_back_to_their_zone() -> None:
    victim, other = pod("v", "3", "2Gi"), pod("w", "1", "1Gi")
    placement = placed({"default/v/main": 0, "default/w/main": 1}, [victim, other])
    view = parse_nrt(make_nrt("n1", VICTIM_ZONES))
    after = post_eviction(view, [info(victim)], placement)
    assert after.zones[0].available == {"cpu": 4000, "memory": 12 * 1024**3}
    assert after.zones[1].available == view.zones[1].available
    assert view.zones[0].available == {"cpu": 1000, "memory": 10 * 1024**3}  # the view itself is left alone


def test_post_eviction_refuses_what_it_cannot_simulate() -> None:
    view = parse_nrt(make_nrt("n1", VICTIM_ZONES))
    big, shared = pod("big", "8", "2Gi"), pod("shared", "3", guaranteed=False)
    placement = placed({"default/big/main": 0}, [big, shared])
    with pytest.raises(EvictionImpossible, match="^resource release request exceeds NUMA allocatable$"):
        post_eviction(view, [info(big)], placement)  # 1 + 8 CPUs > 8 allocatable
    with pytest.raises(EvictionImpossible, match="^no resources to add, cannot process eviction simulation$"):
        post_eviction(view, [info(shared)], placement)  # nothing exclusive (and not placed)


def dry_run_filter(pl: NodeResourceTopologyMatch, ni: NodeInfo, preemptor: Obj) -> str | None:
    """Filter ``preemptor`` on ``ni`` with its pods removed, as DefaultPreemption's dry run does."""
    state = CycleState()
    p = info(preemptor)
    pl.pre_filter(state, p)
    dry = ni.clone()
    for victim in list(ni.pods):
        dry.remove_pod(victim)
        pl.remove_pod(state, p, victim, dry)
    status = pl.filter(state, p, dry)
    return status.message() if status else None


VICTIM = {"default/v/main": 0}


@pytest.mark.parametrize("args, expected", [
    ({"preemptionMode": "Enabled", "cacheResyncMode": "OnUpdate"}, None),
    ({"preemptionMode": "Disabled", "cacheResyncMode": "OnUpdate"}, "cannot align container"),
    # no placement: scheduler-plugins' passthrough and discard-reserved caches give none
    ({"preemptionMode": "Enabled"}, "cannot align container"),
    ({"preemptionMode": "Enabled", "discardReservedNodes": True}, "cannot align container"),
    # the periodic reservation cache keeps no pods with the object it saw first
    ({"preemptionMode": "Enabled", "cacheResyncPeriodSeconds": 5}, "cannot align container"),
])
def test_the_dry_run_frees_victims_zones_only_with_a_placement_from_the_cache(args: Obj, expected: str | None) -> None:
    victim = pod("v", "6", "2Gi")
    ni = node_info(pods=[victim])
    nrt = make_nrt("n1", VICTIM_ZONES, fingerprint=pods_fingerprint(["default/v"]), placement=VICTIM)
    pl, _ = plugin([nrt], args, nodes=[ni])
    assert dry_run_filter(pl, ni, pod("p", "5")) == expected


def test_the_periodic_cache_has_a_placement_once_a_resync_flushed_the_node() -> None:
    victim = pod("v", "6", "2Gi")
    ni = node_info(pods=[victim])
    nrt = make_nrt("n1", VICTIM_ZONES, fingerprint=pods_fingerprint(["default/v"]), placement=VICTIM)
    pl, handle = plugin([nrt], {"preemptionMode": "Enabled", "cacheResyncPeriodSeconds": 5}, nodes=[ni])
    assert run_filter(pl, pod("p", "5"), ni) == "cannot align container"  # marks the node for a resync
    assert dry_run_filter(pl, ni, pod("p", "5")) == "cannot align container"
    handle.time = 5.0  # the resync finds the object's fingerprint matching the node's pods: flushed
    assert dry_run_filter(pl, ni, pod("p", "5")) is None


def test_a_placement_that_cannot_be_simulated_fails_the_node_with_upstreams_message() -> None:
    victim = pod("v", "6", "2Gi")
    ni = node_info(pods=[victim])
    # the object says v is in zone 1, whose 4 available CPUs cannot take 6 back
    nrt = make_nrt("n1", VICTIM_ZONES, fingerprint=pods_fingerprint(["default/v"]), placement={"default/v/main": 1})
    pl, _ = plugin([nrt], {"preemptionMode": "Enabled", "cacheResyncMode": "OnUpdate"}, nodes=[ni])
    assert dry_run_filter(pl, ni, pod("p", "5")) == (
        "eviction simulation in NRT is not possible:resource release request exceeds NUMA allocatable")


def test_no_placement_when_the_object_encodes_other_containers_than_the_scheduler_knows() -> None:
    victim = pod("v", "6", "2Gi")
    ni = node_info(pods=[victim])
    # two containers encoded, one known: decoding is refused, the zones stay as they are
    nrt = make_nrt("n1", VICTIM_ZONES, fingerprint=pods_fingerprint(["default/v"]),
                   placement={"default/v/main": 0, "default/gone/main": 1})
    pl, _ = plugin([nrt], {"preemptionMode": "Enabled", "cacheResyncMode": "OnUpdate"}, nodes=[ni])
    assert dry_run_filter(pl, ni, pod("p", "5")) == "cannot align container"


def test_a_reprieved_victim_is_counted_again() -> None:
    victim = pod("v", "6", "2Gi")
    ni = node_info(pods=[victim])
    nrt = make_nrt("n1", VICTIM_ZONES, fingerprint=pods_fingerprint(["default/v"]), placement=VICTIM)
    pl, _ = plugin([nrt], {"preemptionMode": "Enabled", "cacheResyncMode": "OnUpdate"}, nodes=[ni])
    state = CycleState()
    preemptor = info(pod("p", "5"))
    pl.pre_filter(state, preemptor)
    dry = ni.clone()
    dry.remove_pod(ni.pods[0])
    pl.remove_pod(state, preemptor, ni.pods[0], dry)
    assert pl.filter(state, preemptor, dry) is None
    pl.add_pod(state, preemptor, ni.pods[0], dry)  # reprieved: back to the plain view
    status = pl.filter(state, preemptor, dry)
    assert status is not None and status.message() == "cannot align container"


# -- one container: the zones are read as they are --------------------------------------------------
_zone_st = st.fixed_dictionaries({"cpu": st.integers(0, 8000), "memory": st.integers(0, 16 * 2**30)},
                                 optional={GPU: st.integers(0, 2)})


@settings(max_examples=300, deadline=None, derandomize=True)
@given(zone_amounts=st.lists(_zone_st, min_size=1, max_size=3), cpu=st.integers(0, 8), memory_gi=st.integers(0, 20),
       gpu=st.integers(0, 2), guaranteed=st.booleans(), node_gpus=st.integers(0, 2))
def test_one_container_is_aligned_as_the_general_container_path_aligns_it(
        zone_amounts: list[dict[str, int]], cpu: int, memory_gi: int, gpu: int, guaranteed: bool,
        node_gpus: int) -> None:
    """A pod of one container (no init containers) is aligned on the zones as they are, without the
    copies the general path charges for later containers: both paths give the same verdict, and the
    zones are left untouched."""
    from kubesched.scheduler.plugins.noderesourcetopology.alignment import align_containers, align_pod
    from kubesched.topology.nrt import TopologyView, Zone

    zones_ = [Zone(i, f"node-{i}", dict(amounts)) for i, amounts in enumerate(zone_amounts)]
    before = [dict(z.available) for z in zones_]
    view = TopologyView("n", zones_, policy="single-numa-node", scope="container")
    info = NodeInfo.from_node(node("n", gpus=node_gpus))
    request = pod_request(pod("p", str(cpu) if cpu else None, f"{memory_gi}Gi" if memory_gi else None, gpu,
                              guaranteed=guaranteed))
    fast = align_pod(request, view, info.allocatable)
    general = align_containers(request, view.zones, info.allocatable)
    assert (fast is None) == (general is None)
    assert fast is None or fast.reasons == general.reasons  # type: ignore[union-attr]
    assert [z.available for z in zones_] == before
