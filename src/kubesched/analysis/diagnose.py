"""Why is a pod pending? Every filter verdict on every node (upstream shows only the first failing
plugin per node), what would have to change, and what preemption would do and cost.

A pod already bound is diagnosed as the scheduler saw it before placing it: without its
``spec.nodeName`` and without itself counted on its node (:func:`diagnose`); where and when it was
placed comes from the run's attempts and preemption decisions (:func:`scheduling_history`).
Nodes with the same verdicts are grouped (:func:`node_groups`), as kube-scheduler counts them in its
message, for clusters too large to read node by node.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.analysis.hints import plugin_hints
from kubesched.analysis.volume_hints import claim_hints
from kubesched.k8s.objects import Obj
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.framework.extender import EXTENDER_NAME, ExtenderError
from kubesched.scheduler.framework.extenders import apply_verdicts, filter_through
from kubesched.scheduler.framework.interface import Code, CycleState, Status
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.messages import fit_error_message
from kubesched.scheduler.plugins.crossnodepreemption import TERMINATING_IN_DOMAIN, terminating_in_domain
from kubesched.scheduler.scheduler import Scheduler


@dataclass
class NodeVerdict:
    node: str
    failures: list[dict[str, Any]] = field(default_factory=list)  # plugin, code, reason, hints
    hints: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "fits": self.fits, "failures": self.failures, "hints": self.hints}


_DIGITS = re.compile(r"(\d+)")


@dataclass
class NodeGroup:
    """The nodes that reject a pod for the same reasons (the same plugins with the same messages),
    or that all fit it (``failures`` empty). Each failure counts its distinct hints over the group
    (they name amounts, which differ from node to node)."""

    failures: list[dict[str, Any]]  # plugin, reason, hints (hint → nodes); extender for an extender's
    nodes: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"count": len(self.nodes), "nodes": self.nodes, "failures": self.failures}


def natural_key(name: str) -> list[Any]:
    """Sort key reading the digits in a name as numbers: ``ip-10-0-0-9`` before ``ip-10-0-0-10``."""
    return [int(part) if part.isdigit() else part for part in _DIGITS.split(name)]


def node_groups(verdicts: list[NodeVerdict]) -> list[NodeGroup]:
    """The verdicts grouped by their failures (plugin and reason), largest group first, then by the
    failures; the nodes of a group by name (:func:`natural_key`)."""
    groups: dict[tuple[tuple[str, str, str], ...], NodeGroup] = {}
    for v in sorted(verdicts, key=lambda v: natural_key(v.node)):
        signature = tuple((f["plugin"], f.get("extender", ""), f["reason"]) for f in v.failures)
        group = groups.get(signature)
        if group is None:
            group = groups[signature] = NodeGroup(
                [{"plugin": p, **({"extender": e} if e else {}), "reason": r, "hints": {}} for p, e, r in signature],
                [])
        group.nodes.append(v.node)
        for failure, seen in zip(v.failures, group.failures):
            for hint in failure.get("hints") or ():
                seen["hints"][hint] = seen["hints"].get(hint, 0) + 1
    for group in groups.values():
        for failure in group.failures:  # the most frequent hint first
            failure["hints"] = dict(sorted(failure["hints"].items(), key=lambda item: (-item[1], item[0])))
    return sorted(groups.values(), key=lambda g: (-len(g.nodes), [(f["plugin"], f["reason"]) for f in g.failures]))


#: the fields every candidate of a preemption decision has (the others are its plugin's notes)
CANDIDATE_FIELDS = ("node", "pdbViolations", "victims", "pdbViolatingVictims")


def scheduling_history(result: dict[str, Any], key: str) -> dict[str, Any]:
    """What the run's scheduler did with pod ``key`` (from a SimulationResult with its decisions):
    its attempts, the one that placed it (its time, node and number; None if it was not placed in
    the run: bound before it, or by its own ``spec.nodeName``), the failed attempts before that one
    (or all of them), and each preemption it made (time, node, victims)."""
    attempts = [a for a in result.get("attempts", ()) if a["pod"] == key]
    scheduled = None
    for number, attempt in enumerate(attempts, 1):
        if attempt["outcome"] == "scheduled":
            scheduled = {"time": attempt["time"], "node": attempt["node"], "attempt": number}
    before = attempts[:scheduled["attempt"]] if scheduled else attempts
    preemptions = []
    for decision in result.get("preemptionDecisions", ()):
        if decision["pod"] == key and decision["outcome"] == "preempted":
            chosen = next(c for c in decision["candidates"] if c["node"] == decision["chosen"])
            # the preemption plugin's notes too (victimsElsewhere, keptForAffinity: kubesched's opt-in plugins)
            notes = {k: v for k, v in chosen.items() if k not in CANDIDATE_FIELDS}
            preemptions.append({"time": decision["time"], "node": decision["chosen"], "victims": chosen["victims"],
                                **notes})
    return {"attempts": len(attempts), "failedAttempts": sum(1 for a in before if a["outcome"] != "scheduled"),
            "scheduled": scheduled, "preemptions": preemptions}


@dataclass
class PodDiagnosis:
    pod: str
    phase: str
    node: str | None
    nominated_node: str | None
    priority: int
    upstream_message: str = ""
    pre_filter: str = ""
    #: what stops the pod before any node is looked at, in words (its claims)
    pre_filter_hints: list[str] = field(default_factory=list)
    verdicts: list[NodeVerdict] = field(default_factory=list)
    preemption: dict[str, Any] | None = None
    #: for a ``preemptionPolicy: Never`` pod: what preemption would do were it allowed
    preemption_if_allowed: dict[str, Any] | None = None
    #: a pod the kubelet refused (or that otherwise failed): ``status.reason`` and ``message``
    failed: dict[str, str] | None = None
    #: the moment diagnosed: its simulated time, and whether it is the end of the run
    at: dict[str, Any] = field(default_factory=dict)
    #: a bound pod, diagnosed as a pending one (its nodeName cleared, itself not on its node)
    as_if_pending: bool = False
    #: see :func:`scheduling_history` (empty without the run's result)
    history: dict[str, Any] = field(default_factory=dict)
    #: the lower-priority pods preempted by the scheduler that are still terminating on the pod's
    #: nominated node (what keeps it from preempting again), with who preempted them if known; with
    #: CrossNodePreemption, also those on other nodes of the nominated node's topology domains
    #: that keep it from preempting again (each with its node)
    terminating_on_nominated: list[dict[str, Any]] = field(default_factory=list)
    #: the nodes that pass every filter, in the scheduler's node order (with or without ``detail``)
    feasible: list[str] = field(default_factory=list)
    #: each node that fails: the first failing plugin's message (``plugin: reason``)
    rejected: dict[str, str] = field(default_factory=dict)
    #: the preemption dry run's record itself (its candidates' criteria), beside :attr:`preemption`
    preemption_record: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "at": self.at,
            "phase": self.phase,
            "node": self.node,
            "nominatedNodeName": self.nominated_node,
            "priority": self.priority,
            "upstreamMessage": self.upstream_message,
            "preFilter": self.pre_filter,
            "preFilterHints": self.pre_filter_hints,
            "history": self.history,
            "asIfPending": self.as_if_pending,
            "nodes": [v.to_dict() for v in self.verdicts],
            "nodeGroups": [g.to_dict() for g in node_groups(self.verdicts)],
            "preemption": self.preemption,
            "preemptionIfAllowed": self.preemption_if_allowed,
            "terminatingOnNominatedNode": self.terminating_on_nominated,
            "failed": self.failed,
        }


def _extender_verdicts(fwk: Framework, pod: PodInfo, cache: Cache, result: PodDiagnosis,
                       statuses: dict[str, Status]) -> str | None:
    """The extenders' filter over the nodes every plugin accepted, as the scheduler would call
    them: their refusals join the nodes' verdicts (plugin ``Extender``) and the statuses preemption
    sees. The error that would fail the attempt, if an extender fails and is not ignorable."""
    by_node = {v.node: v for v in result.verdicts}
    fitting = [info for info in cache.node_infos if by_node[info.name].fits]
    try:
        passed, verdicts = filter_through(fwk.extenders, pod, fitting)
    except ExtenderError as err:
        return str(err)
    refused = set()
    for verdict in verdicts:
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if verdict.unresolvable else Code.UNSCHEDULABLE
        if verdict.node in by_node:
            by_node[verdict.node].failures.append({"plugin": EXTENDER_NAME, "extender": verdict.extender,
                                                   "code": code.name, "reason": verdict.reason, "hints": []})
            refused.add(verdict.node)
    kept = {info.name for info in passed}
    for info in fitting:
        if info.name not in kept and info.name not in refused:
            by_node[info.name].failures.append({"plugin": EXTENDER_NAME, "code": Code.UNSCHEDULABLE.name,
                                                "reason": "left out by an extender that gave no reason", "hints": []})
    apply_verdicts(statuses, verdicts)
    return None


def diagnose(scheduler: Scheduler, namespace: str, name: str, *, detail: bool = True,
             run: dict[str, Any] | None = None, end_of_run: bool = True) -> PodDiagnosis:
    """Diagnose a pod against the scheduler's current cache (no side effects on the cluster).
    Without ``detail``, only what kube-scheduler would report is worked out (``upstream_message``,
    ``pre_filter``, ``preemption``): the filters run over all nodes at once, as a scheduling cycle
    runs them, instead of node by node with every failing filter and its hints.

    A bound pod is diagnosed as the scheduler saw it, as a pending pod: without its nodeName and
    without itself on its node (``as_if_pending``). ``run``: the run's SimulationResult with its
    decisions, for the pod's :func:`scheduling_history` and who preempted the pods terminating on
    its nominated node; ``end_of_run``: whether the cluster is at the run's end (else at ``--at``)."""
    obj = scheduler.cluster.get("Pod", namespace, name)
    if obj is None:
        raise KeyError(f"pod {namespace}/{name} not found")
    pod = PodInfo.from_pod(obj)
    status = obj.get("status") or {}
    result = PodDiagnosis(
        pod=pod.key,
        phase=status.get("phase") or "Pending",
        node=pod.node_name or None,
        nominated_node=pod.nominated_node_name or None,
        priority=pod.priority,
        at={"time": scheduler.clock(), "endOfRun": end_of_run},
    )
    if run is not None:
        result.history = scheduling_history(run, pod.key)
    if status.get("reason"):
        result.failed = {"reason": str(status["reason"]), "message": str(status.get("message") or "")}
    if pod.node_name:
        result.as_if_pending = True
        with as_pending(scheduler.cache, obj) as pending:
            _diagnose_filters(scheduler, pending, result, detail)
        return result
    result.terminating_on_nominated = _terminating_on_nominated(scheduler.cache, pod, run)
    _diagnose_filters(scheduler, obj, result, detail)
    if result.preemption is not None and result.preemption["message"] == TERMINATING_IN_DOMAIN:
        # CrossNodePreemption: its own victims elsewhere (or another preemptor's) in the domain
        result.terminating_on_nominated += _terminating_in_domain(scheduler.cache, pod, run)
    return result


@contextmanager
def as_pending(cache: Cache, obj: Obj) -> Iterator[Obj]:
    """A bound pod as it was before the scheduler placed it: its object without ``spec.nodeName``
    (nor the nomination that served to place it), and the cache without it on its node for as long
    as the diagnosis lasts (its own requests and labels would otherwise count against it)."""
    uid = PodInfo.from_pod(obj).uid
    cached, node, assumed = cache.pod_info(uid), cache.pod_node(uid), cache.is_assumed(uid)
    if cached is not None:
        cache.remove_pod(cached)
    try:
        yield {**obj, "spec": {k: v for k, v in obj["spec"].items() if k != "nodeName"},
               "status": {k: v for k, v in (obj.get("status") or {}).items() if k != "nominatedNodeName"}}
    finally:
        if cached is not None and node is not None:
            if assumed:
                cache.assume(cached, node)
            else:
                cache.add_pod(cached)


def _terminating_on_nominated(cache: Cache, pod: PodInfo, run: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The pods upstream's PodEligibleToPreemptOthers finds on the pod's nominated node: of lower
    priority, being deleted, preempted by the scheduler (DisruptionTarget); each with the pod that
    preempted it, when the run's events tell."""
    info = cache.get(pod.nominated_node_name) if pod.nominated_node_name else None
    if info is None:
        return []
    preemptors = _preemptors(run)
    return [{"pod": other.key, "priority": other.priority, "node": info.name, "preemptor": preemptors.get(other.key)}
            for other in info.pods
            if other.priority < pod.priority and other.deleting and other.preempted_by_scheduler()]


def _preemptors(run: dict[str, Any] | None) -> dict[str, str | None]:
    """Who preempted each pod the run's events say was preempted."""
    return {e["pod"]: e.get("preemptor") for e in (run or {}).get("events", ()) if e["reason"] == "Preempted"}


def _terminating_in_domain(cache: Cache, pod: PodInfo, run: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The pods CrossNodePreemption's eligibility rule finds terminating on other nodes of the pod's
    nominated node's topology domains (see :func:`terminating_in_domain`), as
    :func:`_terminating_on_nominated` lists those of the node itself."""
    nominated = cache.get(pod.nominated_node_name) if pod.nominated_node_name else None
    if nominated is None:
        return []
    preemptors = _preemptors(run)
    return [{"pod": other.key, "priority": other.priority, "node": other.node_name,
             "preemptor": preemptors.get(other.key)}
            for other in terminating_in_domain(pod, nominated, cache.node_infos)]


def _diagnose_filters(scheduler: Scheduler, obj: Obj, result: PodDiagnosis, detail: bool) -> None:
    """The filters' verdicts, kube-scheduler's message and preemption's outlook for the pod
    ``obj`` (pending), into ``result``."""
    pod = PodInfo.from_pod(obj)
    fwk = scheduler.framework_for(pod)
    if fwk is None:
        result.pre_filter = f"no profile for schedulerName {pod.scheduler_name!r}"
        return
    cache = scheduler.cache
    cache.update_snapshot()
    state = CycleState()

    def ns_labels(namespace: str) -> dict[str, str]:
        ns = scheduler.cluster.get("Namespace", "", namespace)
        return dict(((ns or {}).get("metadata") or {}).get("labels") or {})

    lookup = scheduler.cluster.get
    _, pre_status = fwk.run_pre_filter(state, pod)
    first_failures: dict[str, Status] = {}
    fits: bool | None = None  # whether some node passes the filters, when worked out without verdicts
    if pre_status is not None:
        result.pre_filter = f"{pre_status.plugin}: {pre_status.message()}"
        result.pre_filter_hints = claim_hints(pod, lookup)
        first_failures = {n.name: pre_status for n in cache.node_infos}
    elif not detail and not fwk.extenders:
        nodes = cache.node_infos
        alive, first_fail, known = fwk.filter_all(state, pod, cache)
        failed = np.flatnonzero(~alive)
        found = fwk.statuses_for(state, pod, cache, failed, first_fail, known)
        first_failures = {nodes[j].name: st for j, st in zip(failed.tolist(), found)}
        fits = bool(alive.any())
        result.feasible = [nodes[j].name for j in np.flatnonzero(alive).tolist()]
    else:
        volumes = scheduler.cluster.list("PersistentVolume") if pod.spec.get("volumes") else []
        for info in cache.node_infos:
            verdict = NodeVerdict(info.name)
            with_nominated = info.clone()
            for other in fwk.nominated_pods_to_add(pod, info.name):
                with_nominated.add_pod(other)
            for pl in fwk.filter_plugins:
                if pl.name in state.skip_filter_plugins:
                    continue
                st = pl.filter(state, pod, with_nominated) or pl.filter(state, pod, info)
                if st is not None and not st.is_success():
                    hints = plugin_hints(pl.name, pod, with_nominated, cache.node_infos, ns_labels, lookup, volumes)
                    verdict.failures.append({"plugin": pl.name, "code": st.code.name, "reason": st.message(),
                                             "hints": hints})
                    verdict.hints.extend(hints)
                    first_failures.setdefault(info.name, st.with_plugin(pl.name))
            result.verdicts.append(verdict)
        if fwk.extenders:
            error = _extender_verdicts(fwk, pod, cache, result, first_failures)
            if error is not None:  # upstream fails the attempt with the extender's error
                result.upstream_message = error
                return
    if fits is None and pre_status is None:
        result.feasible = [v.node for v in result.verdicts if v.fits]
    result.rejected = {node: f"{st.plugin}: {st.message()}" if st.plugin else st.message()
                       for node, st in first_failures.items()}
    pending = pre_status is not None or not (fits if fits is not None else any(v.fits for v in result.verdicts))
    if first_failures and pending:
        result.upstream_message = fit_error_message(
            cache.num_nodes(), pre_status.message() if pre_status else "", first_failures.values(), ""
        )  # (the preemption clause is added below when the PostFilter would fail)
        for post_filter in fwk.post_filter_plugins:
            dry_run = getattr(post_filter, "dry_run", None)
            if dry_run is None:
                continue
            saved = scheduler.rng.bit_generator.state
            try:
                record = dry_run(state, pod, first_failures)
                if pod.preemption_policy == "Never":
                    # what preemption would cost were the pod allowed to preempt
                    allowed = PodInfo.from_pod({**obj, "spec": {**obj["spec"], "preemptionPolicy": "PreemptLowerPriority"}})
                    allowed_state = CycleState()
                    fwk.run_pre_filter(allowed_state, allowed)
                    result.preemption_if_allowed = dry_run(allowed_state, allowed, first_failures).to_dict()
                    scheduler.rng.bit_generator.state = saved
            finally:
                scheduler.rng.bit_generator.state = saved
            result.preemption = record.to_dict()
            result.preemption_record = record
            if record.outcome != "would preempt" and record.message:
                # upstream FitError: the PostFilter's message follows the filters' ("preemption: ...")
                result.upstream_message = fit_error_message(
                    cache.num_nodes(), pre_status.message() if pre_status else "", first_failures.values(),
                    f"preemption: {record.message}")
            break


def missing_pod_text(result: dict[str, Any], namespace: str, name: str, at: float | None) -> str:
    """Why ``namespace/name`` is not there to diagnose: refused by admission, gone, or in another
    namespace (as kubectl would say, with the ``-n`` to use)."""
    key = f"{namespace}/{name}"
    refused = next((r for r in result["rejected"] if r["kind"] == "Pod" and r["name"] == key), None)
    if refused is not None:
        return f"pod {key} was refused by admission ({refused['code']}): {refused['message']}"
    if key in result["pods"]:
        moment = "at the end of the simulation" if at is None else f"at t={at:g}s"
        return f"pod {key} is {result['pods'][key]['phase']} {moment} (try --at an earlier time)"
    elsewhere = sorted(k for k in result["pods"] if k.split("/", 1)[1] == name)
    if elsewhere:
        hint = ", ".join(f"{k} (-n {k.split('/', 1)[0]})" for k in elsewhere[:5])
        return f'pods "{name}" not found in namespace "{namespace}"; there is {hint}'
    return f'pods "{name}" not found in namespace "{namespace}"'
