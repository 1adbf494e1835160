"""NodeResourceTopologyMatch answers once per kind of node view (see
``kubesched.scheduler.plugins.noderesourcetopology.vector``): its Filter and Score over all nodes, its vector forms
and its per-node answers must equal those of a plugin that looks at one node alone, on generated
clusters and pods, after objects change, and across whole simulations with every cache mode."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler.framework.interface import CycleState
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.noderesourcetopology import NodeResourceTopologyMatch
from kubesched.scheduler.plugins.noderesourcetopology import vector as nrt_vector
from kubesched.testkit.builders import make_container, make_nrt, make_nrt_zone, make_pod
from kubesched.testkit.framework import FakeHandle
from kubesched.testkit.runs import explained_json
from kubesched.testkit.scenarios import create_step, delete_step, write_scenario
from kubesched.topology.nrt import PodData, TopologyView, parse_nrt, pods_fingerprint
from kubesched.topology.nrtcache import OverReserve

from .conftest import GPU, node, scenario, topology

Obj = dict[str, Any]
STRATEGY_ARGS = [{"scoringStrategy": {"type": t}} for t in
                 ("LeastAllocated", "MostAllocated", "BalancedAllocation", "LeastNUMANodes")]
STRATEGY_ARGS[1]["scoringStrategy"]["resources"] = [{"name": "cpu", "weight": 3}, {"name": GPU, "weight": 2}]

# a zone: cpus available, memory GiB available, GPUs available (None: the zone does not report GPUs)
zone_st = st.tuples(st.integers(0, 4), st.integers(0, 3), st.one_of(st.none(), st.integers(0, 2)))
# a node: its zones (None: no NodeResourceTopology object), policy, scope, GPUs in allocatable
node_st = st.tuples(st.one_of(st.none(), st.lists(zone_st, min_size=1, max_size=3)),
                    st.sampled_from(["single-numa-node", "restricted", "none"]), st.sampled_from(["container", "pod"]),
                    st.booleans())
# a container: cpus, memory GiB, GPUs; whether the pod is Guaranteed (limits) or Burstable (requests)
container_st = st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 1))
pod_st = st.tuples(st.lists(container_st, min_size=1, max_size=3), st.lists(container_st, max_size=1),
                   st.sampled_from(["limits", "requests", "none"]))


def nrt(name: str, zones: list[tuple[int, int, int | None]], policy: str, scope: str, rv: str = "1",
        fingerprint: str | None = None) -> Obj:
    objs = []
    for i, (cpus, gib, gpus) in enumerate(zones):
        available = {"cpu": str(cpus), "memory": f"{gib}Gi"}
        allocatable = {"cpu": "4", "memory": "3Gi"}
        if gpus is not None:
            available[GPU], allocatable[GPU] = str(gpus), "2"
        objs.append(make_nrt_zone(i, available, allocatable, costs={j: 10 if j == i else 20 + i + j
                                                                   for j in range(len(zones))}))
    return make_nrt(name, objs, policy, scope, rv=rv, fingerprint=fingerprint)


def cluster(nodes: list[tuple[Any, str, str, bool]]) -> tuple[list[NodeInfo], list[Obj]]:
    infos, objects = [], []
    for i, (zones, policy, scope, gpus) in enumerate(nodes):
        infos.append(NodeInfo.from_node(node(f"n{i}", gpus=2 if gpus else 0)))
        if zones is not None:
            objects.append(nrt(f"n{i}", zones, policy, scope))
    return infos, objects


def container(spec: tuple[int, int, int], kind: str, name: str) -> Obj:
    cpus, gib, gpus = spec
    amounts = {k: v for k, v in (("cpu", str(cpus)), ("memory", f"{gib}Gi"), (GPU, str(gpus))) if v[0] != "0"}
    if kind == "none":
        amounts = {GPU: str(gpus)} if gpus else {}
        kind = "limits"
    return make_container(name, resources={kind: amounts} if amounts else {})


def pod_of(spec: tuple[list[Any], list[Any], str], name: str = "p") -> PodInfo:
    containers, inits, kind = spec
    obj = make_pod(name, containers=[container(c, kind, f"c{k}") for k, c in enumerate(containers)],
                   uid=name)
    if inits:
        obj["spec"]["initContainers"] = [container(c, kind, f"i{k}") for k, c in enumerate(inits)]
    return PodInfo.from_pod(obj)


def alone(args: Obj, infos: list[NodeInfo], objects: list[Obj], pod: PodInfo, k: int) -> tuple[bool, str, int]:
    """Filter (passes, message) and Score of a fresh plugin that only ever saw node ``k``."""
    handle = FakeHandle([infos[k]], objects={"NodeResourceTopology": objects})
    plugin = NodeResourceTopologyMatch(args, handle)
    state = CycleState()
    plugin.pre_filter(state, pod)
    status = plugin.filter(state, pod, infos[k])
    return status is None, "" if status is None else status.message(), plugin.score(state, pod, infos[k])


def check(plugin: NodeResourceTopologyMatch, handle: FakeHandle, args: Obj, infos: list[NodeInfo],
          objects: list[Obj], pod: PodInfo, where: list[int]) -> None:
    state = CycleState()
    plugin.pre_filter(state, pod)
    snapshot = handle.snapshot()
    expected = [alone(args, infos, objects, pod, k) for k in range(len(infos))]
    mask = plugin.filter_vector(state, pod, snapshot)
    assert mask is not None
    assert mask.tolist() == [e[0] for e in expected]
    at = plugin.filter_vector_at(state, pod, snapshot, np.array(where, dtype=np.int64))
    assert at is not None
    assert at.tolist() == [expected[k][0] for k in where]
    per_node = [plugin.filter(state, pod, info) for info in infos]
    assert [(s is None, "" if s is None else s.message()) for s in per_node] == [e[:2] for e in expected]
    idx = np.array(where, dtype=np.int64)
    assert plugin.score_vector(state, pod, snapshot, idx).tolist() == [expected[k][2] for k in where]
    assert [plugin.score(state, pod, info) for info in infos] == [e[2] for e in expected]


@settings(max_examples=120, deadline=None, derandomize=True)
@given(nodes=st.lists(node_st, min_size=1, max_size=8), pods=st.lists(pod_st, min_size=1, max_size=3),
       args=st.sampled_from(STRATEGY_ARGS + [{"discardReservedNodes": True}]), data=st.data())
def test_answers_per_view_equal_each_node_alone(nodes, pods, args, data) -> None:
    infos, objects = cluster(nodes)
    handle = FakeHandle(infos, objects={"NodeResourceTopology": objects})
    plugin = NodeResourceTopologyMatch(args, handle)
    for j, spec in enumerate(pods):
        where = data.draw(st.lists(st.integers(0, len(infos) - 1), unique=True))
        check(plugin, handle, args, infos, objects, pod_of(spec, f"p{j}"), where)
        # the exporter rewrites one object: only that node's answers may change
        k = data.draw(st.integers(0, len(infos) - 1))
        zones = data.draw(st.lists(zone_st, min_size=1, max_size=3))
        objects[:] = [o for o in objects if o["metadata"]["name"] != f"n{k}"]
        if data.draw(st.booleans()):
            objects.append(nrt(f"n{k}", zones, nodes[k][1], nodes[k][2], rv=f"{j + 2}"))
        handle.objects["NodeResourceTopology"] = objects


def test_reserved_nodes_are_told_apart_from_their_lookalikes() -> None:
    """With discardReservedNodes, a node holding a reserved pod fails while nodes with the same
    object pass; once the pod is bound, the node is like the others again."""
    infos, objects = cluster([([(4, 3, None)] * 2, "single-numa-node", "container", False)] * 3)
    handle = FakeHandle(infos, objects={"NodeResourceTopology": objects})
    plugin = NodeResourceTopologyMatch({"discardReservedNodes": True}, handle)
    pod = pod_of(([(1, 1, 0)], [], "limits"))
    state = CycleState()
    plugin.pre_filter(state, pod)
    assert plugin.filter_vector(state, pod, handle.snapshot()).tolist() == [True, True, True]
    plugin.reserve(state, pod, "n1")
    state = CycleState()
    plugin.pre_filter(state, pod)
    assert plugin.filter_vector(state, pod, handle.snapshot()).tolist() == [True, False, True]
    assert plugin.score_vector(state, pod, handle.snapshot(), np.arange(3)).tolist()[1] == 0
    plugin.post_bind(state, pod, "n1")
    state = CycleState()
    plugin.pre_filter(state, pod)
    assert plugin.filter_vector(state, pod, handle.snapshot()).tolist() == [True, True, True]
    plugin.reserve(state, pod, "n2")
    assert plugin.filter_vector(state, pod, handle.snapshot()).tolist() == [True, True, False]
    plugin.unreserve(state, pod, "n2")  # a later step failed
    assert plugin.filter_vector(state, pod, handle.snapshot()).tolist() == [True, True, True]


def test_a_reservation_given_back_counts_no_more() -> None:
    """With the reservation cache, a reserved pod is taken from every zone of its node until it is
    unreserved."""
    infos, objects = cluster([([(2, 3, None)] * 2, "single-numa-node", "container", False)] * 2)
    handle = FakeHandle(infos, objects={"NodeResourceTopology": objects})
    plugin = NodeResourceTopologyMatch({"cacheResyncMode": "OnUpdate"}, handle)
    pod = pod_of(([(2, 1, 0)], [], "limits"))
    state = CycleState()
    plugin.pre_filter(state, pod)
    idx = np.arange(2)
    before = plugin.score_vector(state, pod, handle.snapshot(), idx).tolist()
    plugin.reserve(state, pod, "n0")
    assert [plugin.filter(state, pod, info) is None for info in infos] == [False, True]
    during = plugin.score_vector(state, pod, handle.snapshot(), idx).tolist()
    assert during[0] < before[0] and during[1] == before[1]
    plugin.unreserve(state, pod, "n0")
    assert [plugin.filter(state, pod, info) is None for info in infos] == [True, True]
    assert plugin.score_vector(state, pod, handle.snapshot(), idx).tolist() == before


def test_the_reservation_cache_notes_the_nodes_it_rejects() -> None:
    """Filter notes each node it rejects for the next resync; the vector form leaves that to
    note_rejections, which the framework calls with the rejected nodes the filters before passed."""
    infos, objects = cluster([([(0, 0, None)], "single-numa-node", "container", False),
                              ([(4, 3, None)], "single-numa-node", "container", False)] * 2)
    handle = FakeHandle(infos, objects={"NodeResourceTopology": objects})
    plugin = NodeResourceTopologyMatch({"cacheResyncPeriodSeconds": 5}, handle)
    pod = pod_of(([(1, 1, 0)], [], "limits"))
    state = CycleState()
    plugin.pre_filter(state, pod)
    assert plugin.filter_vector(state, pod, handle.snapshot()).tolist() == [False, True, False, True]
    assert plugin.cache.maybe_overreserved == set()  # type: ignore[union-attr]
    plugin.note_rejections(state, pod, handle.snapshot(), np.array([2]))
    assert plugin.cache.maybe_overreserved == {"n2"}  # type: ignore[union-attr]
    assert plugin.filter(state, pod, infos[0]) is not None
    assert plugin.cache.maybe_overreserved == {"n0", "n2"}  # type: ignore[union-attr]


def test_a_node_refused_for_foreign_pods_is_not_noted_as_over_reserved() -> None:
    """Data made invalid by another scheduler's pod is refused as such, not as a zone that looked
    too full (which would be noted for the resync)."""
    infos, objects = cluster([([(4, 3, None)], "single-numa-node", "container", False)])
    other = make_pod("other", containers=[make_container("c", resources={"limits": {"cpu": "1", "memory": "1Gi"}})],
                     node="n0", scheduler_name="other-scheduler", uid="other")
    infos[0].add_pod(PodInfo.from_pod(other))
    handle = FakeHandle(infos, objects={"NodeResourceTopology": objects})
    plugin = NodeResourceTopologyMatch({"cacheResyncPeriodSeconds": 5}, handle)
    pod = pod_of(([(1, 1, 0)], [], "limits"))
    state = CycleState()
    plugin.pre_filter(state, pod)
    status = plugin.filter(state, pod, infos[0])
    assert status is not None and status.message() == "invalid node topology data"
    assert plugin.filter_vector(state, pod, handle.snapshot()).tolist() == [False]
    plugin.note_rejections(state, pod, handle.snapshot(), np.array([0]))
    assert plugin.cache.maybe_overreserved == set()  # type: ignore[union-attr]


# -- whole simulations: the shared answers against answers worked out afresh for every node --------------
CACHES = [
    {},
    {"discardReservedNodes": True},
    {"cacheResyncPeriodSeconds": 3},
    {"cacheResyncMode": "OnUpdate", "scoringStrategy": {"type": "LeastNUMANodes"}},
    {"scoringStrategy": {"type": "BalancedAllocation"}},
]


def workload(args: Obj) -> list[Obj]:
    """The scenario: twelve nodes (every third with a GPU per zone), pods of one to three
    containers (some with an init container or a Burstable container, some placed by another
    scheduler) arriving over half a minute, each running a few seconds, some deleted before; the
    exporter polls every two seconds."""
    objs: list[Obj] = [node(f"n{i}", cpu="24", gpus=2 if i % 3 == 0 else 0) for i in range(12)]
    shapes = [("2", "1Gi"), ("4", "2Gi"), ("1", "512Mi"), ("3", "3Gi")]
    steps = []
    for i in range(120):
        cpu, mem = shapes[i % len(shapes)]
        containers = [make_container(f"c{k}", resources={"limits": {"cpu": cpu, "memory": mem}})
                      for k in range(1 + i % 3)]
        if i % 7 == 0:
            containers[0]["resources"]["limits"][GPU] = "1"
        if i % 5 == 0:
            containers[-1]["resources"] = {"requests": {"cpu": "500m"}}
        p = make_pod(f"p{i}", containers=containers, annotations={"kubesched.io/run-for": f"{5 + i % 11}s"})
        if i % 10 == 9:  # placed by another scheduler: foreign to the reservation cache
            p["spec"].update(schedulerName="other-scheduler", nodeName=f"n{i % 12}")
        if i % 4 == 0:
            p["spec"]["initContainers"] = [make_container("init", resources={"limits": {"cpu": "2", "memory": "1Gi"}})]
        steps.append(create_step(f"{i // 4}s", p))
        if i % 9 == 4:
            steps.append(delete_step(f"{i // 4 + 3}s", "Pod", f"p{i - 2}"))
    zone = {"cpus": 8, "memory": "32Gi", "devices": {GPU: 1}}
    section = topology(zone_list=[zone, zone], exporter={"mode": "Poll", "interval": "2s"})
    return scenario(objs, topo=section, plugin=True, args=args, steps=steps, until="2m")


@pytest.mark.parametrize("args", CACHES, ids=lambda a: ",".join(a) or "passthrough")
def test_simulations_decide_as_with_every_answer_worked_out_afresh(tmp_path: Path, args: Obj,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_scenario(tmp_path, workload(args))
    shared = explained_json(path)
    fresh_codes = itertools.count()
    # every object listed, every node's view read from the cache anew each cycle and given a code
    # no other node has: no answer is shared between nodes or kept between cycles
    monkeypatch.setattr(nrt_vector.ViewCodes, "code", lambda self, name: next(fresh_codes))
    refresh = NodeResourceTopologyMatch._refresh

    def refresh_forgetting(self: NodeResourceTopologyMatch) -> None:
        self._mark = self._node_mark = None  # no journals: every object listed, every node looked at
        refresh(self)
        self._views.clear()

    monkeypatch.setattr(NodeResourceTopologyMatch, "_refresh", refresh_forgetting)
    # and Filter asked node by node (its own notes on rejections)
    monkeypatch.setattr(NodeResourceTopologyMatch, "_filter_nodes", lambda *args: None)
    assert explained_json(path) == shared
    assert next(fresh_codes) > 20 * 12  # the reference worked node by node, cycle after cycle


# -- the reservation cache flushed on update, refreshed for the nodes that may have moved -------------
def flushed_on_update() -> tuple[OverReserve, dict[str, TopologyView]]:
    cache = OverReserve(1.0, on_update=True)
    latest = {"n0": parse_nrt(nrt("n0", [(4, 3, None)], "single-numa-node", "container"))}
    cache.refresh(0.0, latest, {"n0"}, lambda view: [])
    return cache, latest


def cpus(cache: OverReserve, node: str = "n0") -> int:
    view, usable = cache.view(node)
    assert view is not None and usable
    return view.zones[0].available["cpu"]


def test_a_node_whose_reservation_is_given_back_takes_its_latest_object() -> None:
    cache, latest = flushed_on_update()
    cache.reserve("n0", "default/p", {"cpu": 1000})
    assert cpus(cache) == 3000
    latest["n0"] = parse_nrt(nrt("n0", [(2, 3, None)], "single-numa-node", "container", rv="2"))
    cache.refresh(1.0, latest, {"n0"}, lambda view: [])  # the object does not reflect the pod: kept
    assert cpus(cache) == 3000
    cache.unreserve("n0", "default/p")  # a later step failed: the node is clean again
    cache.refresh(2.0, latest, set(), lambda view: [])
    assert cpus(cache) == 2000


def test_a_node_with_foreign_pods_is_flushed_once_its_object_reflects_them() -> None:
    cache, latest = flushed_on_update()
    pods = [PodData("default", "a")]
    latest["n0"] = parse_nrt(nrt("n0", [(1, 3, None)], "single-numa-node", "container", rv="2",
                                 fingerprint=pods_fingerprint(["default/a"])))
    cache.node_has_foreign_pods("n0")
    assert cache.view("n0") == (None, False)
    cache.refresh(1.0, latest, {"n0"}, lambda view: [])  # the scheduler does not see the pod yet
    assert cache.view("n0") == (None, False)
    cache.refresh(2.0, latest, set(), lambda view: pods)  # now it does; the object did not change
    assert cpus(cache) == 1000


def test_a_reserved_node_is_flushed_when_the_scheduler_catches_up_with_its_object() -> None:
    """The object already shows pod b gone while the scheduler still has it: the node is flushed
    at the first refresh after the scheduler sees b go, though the object did not change again."""
    cache, latest = flushed_on_update()
    cache.reserve("n0", "default/a", {"cpu": 1000})
    latest["n0"] = parse_nrt(nrt("n0", [(3, 3, None)], "single-numa-node", "container", rv="2",
                                 fingerprint=pods_fingerprint(["default/a"])))
    both, one = [PodData("default", "a"), PodData("default", "b")], [PodData("default", "a")]
    cache.refresh(1.0, latest, {"n0"}, lambda view: both)
    assert cpus(cache) == 3000  # the first object less the reservation
    cache.refresh(2.0, latest, set(), lambda view: one)
    assert cpus(cache) == 3000 and not cache.assumed.get("n0")  # the latest object, reservation dropped
    assert cache.flushes == 1
