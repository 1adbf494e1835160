"""NodeResourceTopologyMatch in DefaultPreemption's dry run, with the reservation cache: the nodes its
Filter rejects there are noted for the next resync as upstream's Filter notes them (everywhere with
``preemptionMode: Disabled``; with ``Enabled`` not where victims were taken off the node), whichever
way the framework runs the dry run."""

from __future__ import annotations

from typing import Any

from kubesched.scheduler.config import build_profile
from kubesched.scheduler.framework.interface import CycleState
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.plugins.defaultpreemption import DefaultPreemption
from kubesched.scheduler.plugins.noderesourcetopology import NodeResourceTopologyMatch
from kubesched.scheduler.queue import Nominator
from kubesched.testkit.builders import make_container, make_nrt, make_nrt_zone, make_priority_class
from kubesched.testkit.framework import FakeHandle, cache_of
from kubesched.testkit.runs import events, node_of, phase
from kubesched.testkit.scenarios import create_step
from kubesched.topology.nrtcache import OverReserve

from .conftest import PLUGIN, Obj, node, pod, profile, scenario, start_time, topology

PORT = [{"containerPort": 80, "hostPort": 8080}]
QUICK = {"kubesched.io/exit-after": "1s"}


def zones(*cpus: int) -> list[Obj]:
    return [make_nrt_zone(k, {"cpu": str(c), "memory": "16Gi"}, {"cpu": "8", "memory": "16Gi"})
            for k, c in enumerate(cpus)]


def with_port(obj: Obj) -> Obj:
    obj["spec"]["containers"][0]["ports"] = list(PORT)
    return obj


def preemptor(name: str, cpu: str, **fields: Any) -> Obj:
    """A Guaranteed pod with its requests written out (no API server defaults them from the
    limits here), of priority 1000."""
    amounts = {"cpu": cpu, "memory": "1Gi"}
    return pod(name, containers=[make_container("main", resources={"requests": amounts, "limits": amounts})],
               priority=1000, **fields)


def uid(obj: Obj) -> Obj:
    obj["metadata"]["uid"] = obj["metadata"]["name"]
    return obj


class DryRun:
    """One profile (NodeResourceTopologyMatch enabled with ``args``, filters in ``order`` first) over
    ``nodes`` and their bound ``pods``: a failed cycle of ``preemptor`` and DefaultPreemption's dry run."""

    def __init__(self, nodes: list[Obj], pods: list[Obj], nrts: list[Obj], args: Obj,
                 order: list[str] | None = None) -> None:
        self.cache = cache_of(nodes, [uid(p) for p in pods])
        self.handle = FakeHandle(self.cache, objects={"NodeResourceTopology": nrts})
        config = profile(args=args)
        if order:
            config["plugins"]["filter"] = {"enabled": [{"name": name} for name in order]}
        built = build_profile(config, 0, lambda _name: self.handle)
        self.fwk = Framework(built, Nominator(lambda _pod: True))
        self.handle.framework = self.fwk
        self.nrt = built.plugins[PLUGIN]
        self.preemption = built.plugins["DefaultPreemption"]
        assert isinstance(self.nrt, NodeResourceTopologyMatch) and isinstance(self.preemption, DefaultPreemption)
        assert isinstance(self.nrt.cache, OverReserve)
        self.marked = self.nrt.cache.maybe_overreserved

    def run(self, preemptor: Obj) -> tuple[CycleState, PodInfo, set[str], list[str]]:
        """The cycle's filters then the dry run: (state, pod, the nodes the filters noted, the
        candidates' nodes)."""
        pod_info = PodInfo.from_pod(uid(preemptor))
        state = CycleState()
        assert self.fwk.run_pre_filter(state, pod_info)[1] is None
        alive, first_fail, known = self.fwk.filter_all(state, pod_info, self.cache)
        assert not alive.any()
        failing = list(range(len(alive)))
        statuses = self.fwk.statuses_for(state, pod_info, self.cache, failing, first_fail, known)
        noted_by_filters = set(self.marked)
        record = self.preemption.dry_run(state, pod_info, {
            self.cache.node_infos[j].name: st for j, st in zip(failing, statuses)})
        return state, pod_info, noted_by_filters, sorted(c.node for c in record.candidates)


def _n1_only(args: Obj) -> DryRun:
    """n1: 16 CPUs, 4 + 4 free in its zones, a low-priority 12-CPU Burstable pod (shared CPUs) on it.
    The 5-CPU preemptor fails NodeResourcesFit (12 + 5 > 16), so NodeResourceTopologyMatch is not
    asked; with the low pod gone NodeResourcesFit passes and the zones (4 + 4) do not."""
    return DryRun([node("n1")], [pod("filler", "12", node="n1", guaranteed=False, priority=100)],
                  [make_nrt("n1", zones(4, 4))], args)


def test_the_dry_run_notes_the_node_its_numa_filter_rejects() -> None:
    dry = _n1_only({"cacheResyncPeriodSeconds": 5})
    state, urgent, by_filters, candidates = dry.run(preemptor("urgent", "5"))
    assert by_filters == set()  # the cycle's filters stopped at NodeResourcesFit
    assert candidates == []
    assert dry.marked == {"n1"}  # noted by Filter in the dry run, as upstream's Filter notes it
    # the dry run that did it: a clone of the node with its filters called (the arithmetic forms
    # are for cycles whose only pod-dependent filter is NodeResourcesFit)
    assert dry.fwk.preemption_arithmetic(state) is None
    fit = dry.fwk.preemption_fit(state)
    assert fit is not None
    assert dry.fwk.dry_run_batch(state, urgent, dry.cache, fit, dry.fwk.nominated_load(urgent, dry.cache)) is None
    assert not dry.fwk.rejections_noted_before(state, fit)


def test_with_preemption_mode_enabled_the_dry_run_with_victims_notes_nothing() -> None:
    """Upstream's Filter skips the note in its preemption flow (victims taken off the node)."""
    dry = _n1_only({"cacheResyncPeriodSeconds": 5, "preemptionMode": "Enabled"})
    assert dry.run(preemptor("urgent", "5"))[2:] == (set(), [])
    assert dry.marked == set()


def _ported(order: list[str] | None) -> DryRun:
    """Filters NodePorts, NodeResourceTopologyMatch, NodeResourcesFit in that order (``order``) or
    the default (NodeResourceTopologyMatch last). x: the low-priority pod holding the preemptor's
    host port, 12 CPUs of high-priority pods (so NodeResourcesFit fails even with the low pod gone),
    2 + 2 free in its zones. n1: a low-priority 12-CPU pod whose eviction makes room (a candidate)."""
    nodes = [node("n1"), node("x")]
    pods = [pod("filler", "12", node="n1", guaranteed=False, priority=100),
            with_port(pod("porter", "1", node="x", guaranteed=False, priority=100)),
            pod("big", "12", node="x", guaranteed=False, priority=1000)]
    return DryRun(nodes, pods, [make_nrt("n1", zones(8, 8)), make_nrt("x", zones(2, 2))],
                  {"cacheResyncPeriodSeconds": 5}, order)


ORDER = ["NodePorts", PLUGIN, "NodeResourcesFit"]


def test_a_node_ruled_out_by_arithmetic_is_still_filtered_where_the_numa_filter_runs_first() -> None:
    """Upstream's dry run calls the filters in order on x (its port freed, NodeResourceTopologyMatch
    rejects it, NodeResourcesFit would too): x is noted even though n1 gives a candidate."""
    dry = _ported(ORDER)
    state, _, by_filters, candidates = dry.run(with_port(preemptor("urgent", "5")))
    assert by_filters == set()  # n1: NodeResourcesFit; x: NodePorts
    assert candidates == ["n1"]
    assert dry.marked == {"x"}
    fit = dry.fwk.preemption_fit(state)
    assert fit is not None and dry.fwk.rejections_noted_before(state, fit)


def test_with_the_numa_filter_after_node_resources_fit_the_arithmetic_rules_the_node_out() -> None:
    """Default order: upstream's NodeResourcesFit rejects x before NodeResourceTopologyMatch is
    asked, so x is not noted; the arithmetic shortcut is kept."""
    dry = _ported(None)
    state, _, _, candidates = dry.run(with_port(preemptor("urgent", "5")))
    assert candidates == ["n1"]
    assert dry.marked == set()
    fit = dry.fwk.preemption_fit(state)
    assert fit is not None and not dry.fwk.rejections_noted_before(state, fit)


# -- end to end ----------------------------------------------------------------------------------------
PRIORITIES = [make_priority_class("low", 100), make_priority_class("high", 1000)]


def test_a_preemptor_rejected_by_the_numa_filter_only_in_the_dry_run_binds_after_the_resync(simulate: Any) -> None:
    """n1 (2 x 8 CPUs): a (6 CPUs, placed by the scheduler at 0 s) is reserved against both zones
    (2 + 2 left) until a resync flushes n1; a low-priority 8-CPU Burstable pod fills the node. At
    10 s urgent (5 CPUs) fails NodeResourcesFit in the cycle; in the dry run, with the low pod gone,
    the NUMA filter rejects n1 and notes it. The resync at the next cycle after 15 s flushes n1 (the
    exporter's object shows zone 1 free) and urgent, retried by the queue's flush, preempts and binds."""
    objs = [*PRIORITIES, node("n1"), pod("filler", "8", node="n1", priority_class="low", guaranteed=False,
                                         annotations=QUICK),
            pod("a", "6", priority_class="high")]
    steps = [create_step("10s", pod("urgent", "5", priority_class="high"))]
    result = simulate(scenario(objs, topo=topology(exporter={"mode": "Watch"}), plugin=True,
                               args={"cacheResyncPeriodSeconds": 5}, steps=steps, until="10m"))
    first = events(result, "FailedScheduling", "urgent")[0]
    assert first["time"] == 10.0
    assert first["message"].endswith("preemption: 0/1 nodes are available: 1 cannot align container..")
    assert [e["pod"] for e in events(result, "Preempted")] == ["default/filler"]
    assert phase(result, "urgent") == "Running" and node_of(result, "urgent") == "n1"


def test_a_node_the_numa_filter_rejects_in_the_dry_run_is_resynced_whatever_the_filter_order(simulate: Any) -> None:
    """Filters NodePorts, NodeResourceTopologyMatch, NodeResourcesFit in that order. x: a (6 CPUs,
    placed by the scheduler at 0 s, reserved against both zones), a low-priority pod holding port
    8080, 6 more CPUs of high-priority pods. At 10 s urgent (5 CPUs, port 8080) preempts on n1; its
    dry run frees the port on x, where the NUMA filter rejects it (2 + 2 left) before NodeResourcesFit
    would: x is noted, the resync of the cycle at 20 s flushes it, and later (3 CPUs, only x)
    binds there at once instead of waiting to be noted itself, resynced and retried."""
    x = {"pool": "x"}
    objs = [*PRIORITIES, node("n1", labels={"pool": "n1"}), node("x", labels=x),
            pod("filler", "12", node="n1", priority_class="low", guaranteed=False, annotations=QUICK),
            with_port(pod("porter", "1", node="x", priority_class="low", guaranteed=False)),
            pod("big", "6", node="x", priority_class="high", guaranteed=False),
            pod("a", "6", priority_class="high", nodeSelector=x)]
    steps = [create_step("10s", with_port(pod("urgent", "5", priority_class="high"))),
             create_step("20s", pod("later", "3", priority_class="high", nodeSelector=x))]
    config = profile(args={"cacheResyncPeriodSeconds": 5})
    config["plugins"]["filter"] = {"enabled": [{"name": name} for name in ORDER]}
    docs = scenario(objs, topo=topology(exporter={"mode": "Watch"}), plugin=True, steps=steps, until="2m")
    docs[0]["spec"]["schedulerConfiguration"]["profiles"] = [config]
    result = simulate(docs)
    assert node_of(result, "a") == "x"
    assert [e["pod"] for e in events(result, "Preempted")] == ["default/filler"]
    assert node_of(result, "urgent") == "n1"
    assert events(result, "FailedScheduling", "later") == []
    assert start_time(result, "later") == 20.0 and node_of(result, "later") == "x"

