"""All the configured extenders together, at each point of a scheduling cycle where upstream calls
them (``pkg/scheduler/schedule_one.go`` ``findNodesThatPassExtenders`` and ``prioritizeNodes``,
``framework/preemption/preemption.go`` ``callExtenders``, ``schedule_one.go`` ``extendersBinding``):

- filter: each interested extender narrows the nodes the filters left, in order;
- prioritize: each interested extender's weighted scores added to the plugins' totals;
- preempt: each interested extender with a preempt verb narrows the preemption candidates;
- bind: the first interested bind extender binds instead of the Bind plugins.

One extender's calls and wire format are in :mod:`~kubesched.scheduler.framework.extender`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.k8s.objects import ApiError
from kubesched.scheduler.framework.extender import MAX_EXTENDER_PRIORITY, Extender, ExtenderError
from kubesched.scheduler.framework.interface import MAX_NODE_SCORE, Status
from kubesched.scheduler.framework.types import NodeInfo, PodInfo

logger = logging.getLogger("kubesched.scheduler")

#: a candidate node's victims and how many PodDisruptionBudgets their eviction violates
VictimsByNode = dict[str, tuple[list[PodInfo], int]]


def ordered(extenders: Iterable[Extender]) -> list[Extender]:
    """Upstream ``buildExtenders``: the ignorable extenders go after the others."""
    extenders = list(extenders)
    return [e for e in extenders if not e.ignorable] + [e for e in extenders if e.ignorable]


# -- filter ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FilterVerdict:
    """An extender's refusal of one node."""

    node: str
    unresolvable: bool
    reason: str
    extender: str


def filter_through(extenders: Iterable[Extender], pod: PodInfo, nodes: list[NodeInfo],
                   log: Callable[[str], None] | None = None) -> tuple[list[NodeInfo], list[FilterVerdict]]:
    """Upstream ``findNodesThatPassExtenders``: each interested extender, in order, filters what
    the previous ones left. Returns the nodes left (in the given order) and the extenders' verdicts
    in the order upstream records them. A failing extender is skipped when ignorable (``log`` is
    told); otherwise its :class:`ExtenderError` is raised."""
    verdicts: list[FilterVerdict] = []
    for extender in extenders:
        if not nodes:
            break
        if not extender.is_interested(pod):
            continue
        try:
            passed, failed, unresolvable = extender.filter(pod, nodes)
        except ExtenderError as err:
            if not extender.ignorable:
                raise
            if log is not None:
                log(f"skipping extender {extender.name} as it returned error and has ignorable flag set: {err}")
            continue
        verdicts.extend(FilterVerdict(name, True, reason, extender.name) for name, reason in unresolvable.items())
        verdicts.extend(FilterVerdict(name, False, reason, extender.name)
                        for name, reason in failed.items() if name not in unresolvable)
        keep = set(passed)
        nodes = [n for n in nodes if n.name in keep]
    return nodes, verdicts


def filter_indices(extenders: Iterable[Extender], pod: PodInfo, nodes: Sequence[NodeInfo], feasible: np.ndarray
                   ) -> tuple[np.ndarray, list[FilterVerdict]]:
    """:func:`filter_through` for a scheduling cycle: the feasible nodes by index into ``nodes``
    (their order kept); a failing extender that is not ignorable fails the attempt with its error
    (a ``RuntimeError``)."""
    try:
        passed, verdicts = filter_through(extenders, pod, [nodes[j] for j in feasible.tolist()], logger.info)
    except ExtenderError as err:
        raise RuntimeError(str(err)) from err
    return np.asarray([info.index for info in passed], dtype=np.int64), verdicts


def apply_verdicts(statuses: dict[str, Status], verdicts: Iterable[FilterVerdict]) -> None:
    """Into a node -> status map, as upstream does: an unresolvable verdict replaces the node's
    status (keeping its reasons); a plain failure adds its reason to the node's status, or becomes
    it."""
    for verdict in verdicts:
        existing = statuses.get(verdict.node)
        if verdict.unresolvable:
            reasons = (existing.reasons if existing is not None else ()) + (verdict.reason,)
            statuses[verdict.node] = Status.unresolvable(*reasons)
        elif existing is None:
            statuses[verdict.node] = Status.unschedulable(verdict.reason)
        else:
            statuses[verdict.node] = Status(existing.code, existing.reasons + (verdict.reason,), existing.plugin)


# -- prioritize --------------------------------------------------------------------------------------
def add_scores(extenders: Iterable[Extender], pod: PodInfo, infos: Sequence[NodeInfo], totals: np.ndarray,
               per_plugin: dict[str, np.ndarray]) -> None:
    """Upstream ``prioritizeNodes``' extender part: each interested extender's 0..10 scores for
    ``infos``, times its weight, scaled to MaxNodeScore, added to the nodes' ``totals`` (and under
    the extender's name to ``per_plugin``). A failing prioritize call gives no scores (ignorable or
    not)."""
    position = {info.name: k for k, info in enumerate(infos)}
    for extender in extenders:
        if not extender.is_interested(pod):
            continue
        try:
            scores = extender.prioritize(pod, list(infos))
        except ExtenderError as err:
            logger.debug("extender %s gave no scores for pod %s: %s", extender.name, pod.key, err)
            continue
        added = np.zeros(len(infos), dtype=np.int64)  # without a prioritize verb: all 0, as upstream
        for host, score in scores:
            k = position.get(host)
            if k is not None:
                added[k] += score * extender.weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
        totals += added
        per_plugin[extender.name] = per_plugin.get(extender.name, 0) + added


# -- preempt -----------------------------------------------------------------------------------------
def preempting(extenders: Iterable[Extender], pod: PodInfo) -> list[Extender]:
    """The extenders asked about ``pod``'s preemption: interested ones with a preempt verb."""
    return [e for e in extenders if e.supports_preemption and e.is_interested(pod)]


def narrow_victims(extenders: Iterable[Extender], pod: PodInfo, victims: VictimsByNode,
                   node_info: Callable[[str], NodeInfo | None]) -> VictimsByNode | Status:
    """Upstream ``callExtenders``: each of ``extenders`` (see :func:`preempting`), in order, narrows
    the candidates (node -> victims) the previous one left, until none is left. A failing extender
    is skipped when ignorable, else fails the preemption (an Error status); a node it returns
    without victims is dropped (ignorable) or an error."""
    for extender in extenders:
        try:
            answer = extender.process_preemption(pod, victims, node_info)
        except ExtenderError as err:
            if extender.ignorable:
                continue
            return Status.error(str(err))
        for node_name, (pods, _) in list(answer.items()):
            if not pods:
                if extender.ignorable:
                    del answer[node_name]
                    continue
                return Status.error(f'expected at least one victim pod on node "{node_name}"')
        victims = answer
        if not victims:
            break
    return victims


# -- bind --------------------------------------------------------------------------------------------
def binder_for(extenders: Iterable[Extender], pod: PodInfo) -> Extender | None:
    """Upstream ``extendersBinding``: the first interested extender with a bind verb binds the pod
    instead of the Bind plugins."""
    return next((e for e in extenders if e.is_binder and e.is_interested(pod)), None)


def bind_with(binder: Extender, pod: PodInfo, node_name: str) -> Status | None:
    """The binding by ``binder``: None when it bound the pod, else an Error with its message."""
    try:
        binder.bind(pod, node_name)
    except ExtenderError as err:
        return Status.error(str(err))
    except ApiError as err:
        return Status.error(err.message)
    return None


