"""Fidelity of the queue, the event handlers, the scheduling cycle and preemption to kube-scheduler
v1.28.7 (``pkg/scheduler/internal/queue/scheduling_queue.go``, ``eventhandlers.go``,
``schedule_one.go``, ``framework/runtime/framework.go``, ``framework/preemption/preemption.go``,
``framework/plugins/defaultpreemption/default_preemption.go``). Each test names the upstream function
whose behaviour it pins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesched.k8s.objects import ApiError
from kubesched.scheduler import queue as q
from kubesched.scheduler.framework.budgets import DisruptionBudgets
from kubesched.scheduler.framework.interface import (
    ADD,
    ClusterEvent,
    Code,
    CycleState,
    PreFilterResult,
    Status,
)
from kubesched.scheduler.framework.profile import Profile
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.messages import truncate_note
from kubesched.testkit.builders import make_namespace, make_node, make_pdb, make_pod, make_priority_class
from kubesched.testkit.framework import FakeHandle, node_info
from kubesched.testkit.runs import events, run_docs
from kubesched.testkit.scenarios import create_step, scenario_document

Obj = dict[str, Any]


# -- this file's defaults: 4-cpu nodes of 16Gi, pods requesting 1 cpu, no namespace unless given -------------
def node(name: str, cpu: str = "4", *, taints: list[Obj] | None = None) -> Obj:
    return make_node(name, cpu, "16Gi", capacity=None, taints=taints)


def pod(name: str, cpu: str | None = "1", **fields: Any) -> Obj:
    return make_pod(name, cpu, None, namespace=fields.pop("namespace", None), **fields)


def run(tmp_path: Path, *docs: Obj | list[Obj]) -> tuple[dict[str, Any], Any]:
    done = run_docs(tmp_path, docs)
    return done.result, done.sim


def failed(result: dict[str, Any], name: str) -> list[tuple[float, str]]:
    return [(e["time"], e["message"]) for e in events(result, "FailedScheduling", name)]


# -- fakes for framework-level tests ---------------------------------------------------------------
class _NodeSet:
    """A PreFilter plugin that allows only the given nodes."""

    def __init__(self, name: str, nodes: set[str]) -> None:
        self.name = name
        self.nodes = nodes

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        return PreFilterResult(set(self.nodes)), None


class _Broken:
    """A plugin failing every extension point with an Error (or raising an API error on Bind)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return Status(Code.ERROR, ("boom",))

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return Status(Code.ERROR, ("boom",))

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        pass

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        raise ApiError(409, "Conflict", 'pod p is already assigned to node "n1"')


def framework(points: dict[str, list[str]], plugins: dict[str, Any]) -> Framework:
    return Framework(Profile("default-scheduler", plugins, points), q.Nominator(lambda p: True))


def pod_info(name: str = "p", **kw: Any) -> PodInfo:
    return PodInfo.from_pod(pod(name, uid=f"uid-{name}", **kw))


# -- queue ---------------------------------------------------------------------------------------
def test_pod_failing_with_an_error_waits_in_the_unschedulable_pool(tmp_path: Path) -> None:
    """``addUnschedulableWithoutQueueingHint`` (v1.28, hints off) sends a failed pod to backoffQ only
    when a move request arrived during its cycle; a pod without unschedulable plugins (a
    scheduler error) is not sent to backoffQ for that alone (that rule is v1.29's). So in a quiet
    cluster it is retried by the 5-minute leftover flush, not after 1 s, 2 s, 4 s… Here the error
    is v1.28.7's ``findNodesThatFitPod`` failing on a PreFilter node name the snapshot lacks
    (fixed in v1.28.10): the message is the snapshot's ``nodeinfo not found`` error, reason
    SchedulerError."""
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["ghost"]}]}]}}}
    result, sim = run(tmp_path, node("n1"), pod("p", affinity=affinity), scenario_document(until=400))
    msg = 'nodeinfo not found for node name "ghost"'
    assert failed(result, "p") == [(0.0, msg), (330.0, msg)]
    live = sim.cluster.api.get("Pod", "default", "p")
    cond = next(c for c in live["status"]["conditions"] if c["type"] == "PodScheduled")
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "SchedulerError", msg)


def test_add_unschedulable_without_plugins_goes_to_pool_and_any_event_moves_it() -> None:
    """``addUnschedulableWithoutQueueingHint`` + ``isPodWorthRequeuing``: with no move request the
    pod (no unschedulable plugins) is parked in unschedulablePods; any event then moves it
    (no plugins → QueueAfterBackoff)."""
    now = [0.0]
    queue = q.SchedulingQueue(lambda: now[0], lambda qpi: (qpi.timestamp,), lambda p: None,
                              lambda name: {}, q.Nominator(lambda p: True))
    queue.add(pod_info("p"))
    qpi = queue.pop()
    assert qpi is not None
    queue.add_unschedulable_if_not_present(qpi, queue.scheduling_cycle)
    assert "uid-p" in queue.unschedulable and not queue.has_backoff()
    now[0] = 5.0
    queue.move_all(ClusterEvent("Node", ADD, "NodeAdd"))
    assert queue.has_active()


def test_activate_reregisters_the_nomination() -> None:
    """``PriorityQueue.activate``: a pod moved to activeQ by Activate is (re)added to the nominator
    from its ``status.nominatedNodeName``."""
    nominator = q.Nominator(lambda p: True)
    queue = q.SchedulingQueue(lambda: 0.0, lambda qpi: (qpi.timestamp,), lambda p: None,
                              lambda name: {}, nominator)
    p = pod_info("p", status={"nominatedNodeName": "n1"})
    queue.add(p)
    qpi = queue.pop()
    assert qpi is not None
    queue.add_unschedulable_if_not_present(qpi, queue.scheduling_cycle)
    nominator.delete(p)
    queue.activate([p])
    assert queue.has_active()
    assert nominator.nominated_node("uid-p") == "n1"


# -- event handlers --------------------------------------------------------------------------------
def test_node_add_precheck_handles_a_pod_nodeResourcesFit_rejected_at_prefilter(tmp_path: Path) -> None:
    """``preCheckForNode`` uses ``noderesources.Fits`` directly (no PreFilter state, nothing
    ignored). A pending pod with a restartable init container (rejected by NodeResourcesFit's
    PreFilter while SidecarContainers is off) must not break the NodeAdd handler; it is moved
    (NodeResourcesFit registers Node/Add) and retried when the node arrives."""
    p = pod("p")
    p["spec"]["initContainers"] = [{"name": "side", "image": "registry.k8s.io/pause:3.9",
                                    "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}]
    result, _ = run(tmp_path, node("n1"), p, scenario_document(steps=[create_step(5, node("n2"))], until=20))
    assert [t for t, _ in failed(result, "p")] == [0.0, 5.0]


def test_assigned_pod_add_honours_the_affinity_terms_namespace_selector(tmp_path: Path) -> None:
    """``getUnschedulablePodsWithMatchingAffinityTerm`` / ``AffinityTerm.Matches``: an assigned pod
    moves a pending pod only if it matches a required affinity term *including* the term's
    namespaceSelector. A matching pod in a namespace the selector rejects moves nothing; one in a
    selected namespace does."""
    term = {"labelSelector": {"matchLabels": {"app": "x"}},
            "namespaceSelector": {"matchLabels": {"team": "a"}}, "topologyKey": "kubernetes.io/hostname"}
    p = pod("p", affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    result, _ = run(
        tmp_path, make_namespace("a", {"team": "a"}), make_namespace("b", {"team": "b"}), node("n1"), p,
        scenario_document(steps=[create_step(20, pod("other", None, namespace="b", node="n1", labels={"app": "x"})),
                  create_step(40, pod("mate", None, namespace="a", node="n1", labels={"app": "x"}))], until=100),
    )
    assert [t for t, _ in failed(result, "p")] == [0.0]
    scheduled = [(e["time"], e["node"]) for e in result["events"]
                 if e["reason"] == "Scheduled" and e["pod"] == "default/p"]
    assert scheduled == [(40.0, "n1")]


# -- scheduling cycle ------------------------------------------------------------------------------
def test_next_start_node_index_counts_the_failed_nominated_node(tmp_path: Path) -> None:
    """``findNodesThatFitPod``: ``processedNodes = len(feasibleNodes) + len(diagnosis.NodeToStatusMap)``
    and the diagnosis already holds the nominated node's status from ``evaluateNominatedNode``. With
    200 nodes the search stops at 100 feasible ones (n000–n099); the failed nominated node n199
    (tainted) was not scanned again, so the start index advances by 101, not 100."""
    nodes = [node(f"n{i:03d}") for i in range(199)]
    nodes.append(node("n199", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]))
    result, sim = run(tmp_path, nodes, pod("p", status={"nominatedNodeName": "n199"}), scenario_document())
    assert result["pods"]["default/p"]["node"] < "n100"
    assert sim.scheduler.next_start_node_index == 101


def test_prefilter_results_with_empty_intersection_are_unschedulable_without_plugin() -> None:
    """``RunPreFilterPlugins``: when the PreFilter node sets intersect to nothing the status is a
    plain Unschedulable (not UnschedulableAndUnresolvable, so preemption still considers the
    nodes) with no failed plugin recorded, and the message lists the contributing plugins."""
    fwk = framework({"preFilter": ["A", "B"]}, {"A": _NodeSet("A", {"n1"}), "B": _NodeSet("B", {"n2"})})
    result, status = fwk.run_pre_filter(CycleState(), pod_info())
    assert result is None and status is not None
    assert status.code == Code.UNSCHEDULABLE
    assert status.plugin == ""
    assert status.message() == "node(s) didn't satisfy plugin(s) [A B] simultaneously"


def test_runtime_reports_plugin_errors_as_upstream() -> None:
    """``RunFilterPlugins`` / ``RunReservePluginsReserve`` / ``RunBindPlugins``: a non-rejection
    status becomes an Error whose message names the extension point and the plugin; DefaultBinder
    returns the API server's error, so a failed binding reads ``running Bind plugin "…": <error>``."""
    broken = _Broken("X")
    fwk = framework({"filter": ["X"], "reserve": ["X"], "bind": ["X"]}, {"X": broken})
    p = pod_info()
    info = node_info(node("n1"))
    filt = fwk.run_filter(CycleState(), p, info)
    assert filt is not None and filt.code == Code.ERROR
    assert filt.message() == 'running "X" filter plugin: boom'
    reserve = fwk.run_reserve(CycleState(), p, "n1")
    assert reserve is not None and reserve.message() == 'running Reserve plugin "X": boom'
    bind = fwk.run_bind(CycleState(), p, "n1")
    assert bind is not None and bind.code == Code.ERROR
    assert bind.message() == 'running Bind plugin "X": pod p is already assigned to node "n1"'


def test_plugins_without_registered_events_are_moved_by_every_event() -> None:
    """``fillEnqueueExtensions``: a plugin that does not implement EnqueueExtensions gets every
    event (``UnrollWildCardResource``), so a pod it rejected is not stuck until the leftover flush."""
    fwk = framework({"filter": ["X"]}, {"X": _Broken("X")})
    events = fwk.events_by_plugin()["X"]
    assert any(e.matches(ClusterEvent("Node", ADD, "NodeAdd")) for e in events)
    assert any(e.matches(ClusterEvent("Pod", 2, "AssignedPodDelete")) for e in events)


def test_event_note_is_truncated_by_bytes() -> None:
    """``truncateMessage``: the 1024 limit (``NoteLengthLimit``) is measured in bytes (Go ``len``)
    and the cut keeps 1020 bytes plus ``" ..."``."""
    ascii_msg = "x" * 1030
    assert truncate_note(ascii_msg) == "x" * 1020 + " ..."
    wide = "é" * 600  # 1200 bytes but only 600 characters
    cut = truncate_note(wide)
    assert cut.endswith(" ...") and len(cut.encode()) == 1024
    assert cut[:-4] == "é" * 510
    assert truncate_note("é" * 512) == "é" * 512


# -- preemption ------------------------------------------------------------------------------------
def test_pdb_with_invalid_selector_matches_nothing() -> None:
    """``filterPodsWithPDBViolation``: a PDB whose selector cannot be converted is skipped (it
    protects nothing) instead of failing the preemption."""
    bad = make_pdb("bad", {"matchExpressions": [{"key": "app", "operator": "Bogus"}]}, namespace="default",
                   disruptions_allowed=0)
    victim = pod_info("v", labels={"app": "x"})
    budgets = DisruptionBudgets(FakeHandle(objects={"PodDisruptionBudget": [bad]})).refresh()
    violating, non_violating = budgets.split([victim])
    assert violating == [] and non_violating == [victim]


def test_victim_start_times_compare_at_whole_second_precision(tmp_path: Path) -> None:
    """``SelectVictimsOnNode`` sorts by ``util.MoreImportantPod`` (priority, then earlier
    ``GetPodStartTime``). ``status.startTime`` is a ``metav1.Time``, carried by the API with
    whole-second precision, so pods started at :00.7 and :00.2 of the same second tie; the tie keeps
    the node's pod order (``a`` first), ``a`` is reprieved first and ``b`` is the victim. Comparing
    the fractions would wrongly make ``b`` (started earlier in the second) the more important one."""
    classes = [make_priority_class(n, v) for n, v in (("low", 100), ("high", 1000))]
    a = pod("a", "2", node="n1", priorityClassName="low", status={"startTime": "2025-12-31T23:59:00.700000Z"})
    b = pod("b", "2", node="n1", priorityClassName="low", status={"startTime": "2025-12-31T23:59:00.200000Z"})
    preemptor = pod("p", "2", priorityClassName="high")
    result, _ = run(tmp_path, classes, node("n1"), a, b, scenario_document(steps=[create_step(1, preemptor)], until=100))
    assert [e["pod"] for e in result["events"] if e["reason"] == "Preempted"] == ["default/b"]


def test_dry_run_error_without_candidates_fails_preemption_with_that_error() -> None:
    """``Evaluator.Preempt``: ``DryRunPreemption`` aggregates the nodes' Error statuses; when no
    candidate was found that error is returned (``framework.AsStatus(err)``) instead of the "0/N
    nodes are available" FitError, and there is no PostFilterResult (the nomination stays)."""
    from kubesched.scheduler.plugins.defaultpreemption import DefaultPreemption

    fwk = framework({"filter": ["X"]}, {"X": _Broken("X")})
    info = node_info(node("n1"), pod_info("v", node="n1", priority=100))
    plugin = DefaultPreemption({}, FakeHandle([info], framework=fwk))
    statuses = {"n1": Status.unschedulable("Insufficient cpu")}
    result, status = plugin.post_filter(CycleState(), pod_info("p", priority=1000), statuses)
    assert result is None
    assert status.code == Code.ERROR
    assert status.message() == 'preemption: running "X" filter plugin: boom'
