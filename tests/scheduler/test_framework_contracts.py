"""The declared plugin contracts (``framework/interface.py``, ``framework/capabilities.py``): the
framework sorts plugins by the protocols they implement, AddPod/RemovePod failures surface as
upstream's runtime reports them, and every default plugin implements the points it is registered for."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.scheduler.config import build_profile
from kubesched.scheduler.framework.capabilities import PodIndependentFilter, PreemptionArithmetic
from kubesched.scheduler.framework.interface import (
    EXTENSION_POINTS,
    Code,
    CycleState,
    PreFilterResult,
    Status,
)
from kubesched.scheduler.framework.preemption import PostFilterDryRun, PreemptionPolicy
from kubesched.scheduler.framework.profile import Profile
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.defaultpreemption import DefaultPreemption
from kubesched.scheduler.plugins.noderesources import NodeResourcesFit
from kubesched.scheduler.plugins.registry import DEFAULT_MULTIPOINT, plugin_registry
from kubesched.scheduler.queue import Nominator
from kubesched.testkit.builders import make_node, make_pod
from kubesched.testkit.framework import FakeHandle, NodeListSnapshot

Obj = dict[str, Any]


def pod_info(name: str, *, priority: int = 0, node: str | None = None, nominated: str | None = None) -> PodInfo:
    obj = make_pod(name, "1", "1Gi", node=node)
    obj["metadata"]["uid"] = f"uid-{name}"
    obj["spec"]["priority"] = priority
    if nominated:
        obj["status"] = {"nominatedNodeName": nominated}
    return PodInfo.from_pod(obj)


def _nominator(by_node: dict[str, list[PodInfo]] | None = None) -> Nominator:
    nominator = Nominator(lambda _: True)
    for node, pods in (by_node or {}).items():
        for pod in pods:
            nominator.add(pod, node)
    return nominator


def framework(points: dict[str, list[str]], plugins: dict[str, Any], nominator: Any = None) -> Framework:
    return Framework(Profile("default-scheduler", plugins, points), nominator or _nominator())


# -- sorting by protocol ------------------------------------------------------------------------------
class _FilterAndScore:
    """Filter + Score only: no vector forms, no normalization, no events, not pod-independent."""

    name = "Partial"

    def __init__(self) -> None:
        self.scored: list[str] = []

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return Status.unschedulable("no") if node.name == "n2" else None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        self.scored.append(node.name)
        return 7


def test_framework_sorts_a_plugin_by_the_protocols_it_implements() -> None:
    """A plugin implementing only Filter and Score runs per node at both points, gets every event
    (no EnqueueExtensions), counts as depending on the node's pods and offers no arithmetic."""
    plugin = _FilterAndScore()
    fwk = framework({"filter": ["Partial"], "score": ["Partial"]}, {"Partial": plugin})
    assert fwk.filter_plugins == [plugin] and fwk.score_plugins == [plugin]
    assert fwk.pre_filter_plugins == [] and fwk.reserve_plugins == [] and fwk.queue_sort is None
    assert fwk.events_by_plugin()["Partial"][0].resource == "*"
    assert fwk.preemption_arithmetic(CycleState()) is None
    snapshot = NodeListSnapshot([NodeInfo.from_node(make_node(n)) for n in ("n1", "n2", "n3")])
    state, pod = CycleState(), pod_info("p")
    alive, first_fail, statuses = fwk.filter_all(state, pod, snapshot)  # type: ignore[arg-type]
    assert alive.tolist() == [True, False, True] and first_fail.tolist() == [-1, 0, -1]
    assert statuses.as_dict()[1].reasons == ("no",) and statuses.as_dict()[1].plugin == "Partial"
    totals, per_plugin = fwk.run_score(state, pod, snapshot, np.array([0, 2]))  # type: ignore[arg-type]
    assert totals.tolist() == [7, 7] and plugin.scored == ["n1", "n3"]


class _NotingVector:
    """A vector Filter rejecting n2 and n3 that notes what it rejects (as the NUMA plugin's
    reservation cache notes nodes for its resync)."""

    name = "Noting"

    def __init__(self) -> None:
        self.noted: list[list[str]] = []

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return Status.unschedulable("full") if node.name in ("n2", "n3") else None

    def filter_vector(self, state: CycleState, pod: PodInfo, snapshot: Any) -> np.ndarray:
        return np.array([info.name not in ("n2", "n3") for info in snapshot.node_infos])

    def note_rejections(self, state: CycleState, pod: PodInfo, snapshot: Any, rejected: np.ndarray) -> None:
        self.noted.append([snapshot.node_infos[j].name for j in rejected.tolist()])


def test_a_vector_filter_notes_only_the_rejections_its_per_node_form_would_have_made() -> None:
    """n2 is rejected by the filter before: the vector filter's rejections noted are n3's alone,
    whether all nodes, a window or the filters but one are asked."""
    noting = _NotingVector()
    fwk = framework({"filter": ["Partial", "Noting"]}, {"Partial": _FilterAndScore(), "Noting": noting})
    snapshot = NodeListSnapshot([NodeInfo.from_node(make_node(n)) for n in ("n1", "n2", "n3", "n4")])
    assert snapshot.table.n == 4  # numbers the NodeInfos
    state, pod = CycleState(), pod_info("p")
    alive, _, _ = fwk.filter_all(state, pod, snapshot)  # type: ignore[arg-type]
    assert alive.tolist() == [True, False, False, True]
    alive, _, _ = fwk.filter_all(state, pod, snapshot, np.array([3, 2, 1]))  # type: ignore[arg-type]
    assert alive.tolist() == [True, False, False]
    ok = fwk.filters_pass_except(state, pod, snapshot, snapshot.node_infos[1:], None)  # type: ignore[arg-type]
    assert ok.tolist() == [False, False, True]
    assert noting.noted == [["n3"], ["n3"], ["n3"]]
    assert fwk.filters_pass_except(state, pod, snapshot, snapshot.node_infos[3:], None).tolist() == [True]  # type: ignore[arg-type]
    assert len(noting.noted) == 3  # nothing rejected: nothing noted


def test_framework_refuses_a_plugin_enabled_at_a_point_it_does_not_implement() -> None:
    """Upstream ``NewFramework``: "plugin %q does not extend %s plugin" (Reserve needs Unreserve too)."""

    class ReserveOnly:
        name = "R"

        def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
            return None

    with pytest.raises(TypeError, match='plugin "R" does not extend reserve plugin'):
        framework({"reserve": ["R"]}, {"R": ReserveOnly()})


# -- AddPod / RemovePod failures -------------------------------------------------------------------
class _Extension:
    """A PreFilter plugin whose AddPod or RemovePod fails (Unschedulable, to show the code changes)."""

    name = "Ext"

    def __init__(self, fail_on: str) -> None:
        self.fail_on = fail_on

    def pre_filter(self, state: CycleState, pod: PodInfo) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status | None:
        return Status.unschedulable("cannot add") if self.fail_on == "add" else None

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status | None:
        return Status.unschedulable("cannot remove") if self.fail_on == "remove" else None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


def test_add_pod_failure_is_an_error_naming_the_plugin() -> None:
    """``RunPreFilterExtensionAddPod``/``RemovePod``: any failure becomes an Error
    ``running AddPod on PreFilter plugin "<name>": <message>``; a Skipped plugin is not asked."""
    fwk = framework({"preFilter": ["Ext"]}, {"Ext": _Extension("add")})
    node = NodeInfo.from_node(make_node("n1"))
    state, pod, other = CycleState(), pod_info("p"), pod_info("o")
    status = fwk.run_add_pod(state, pod, other, node)
    assert status is not None and status.code == Code.ERROR
    assert status.message() == 'running AddPod on PreFilter plugin "Ext": cannot add'
    assert fwk.run_remove_pod(state, pod, other, node) is None
    skipped = CycleState(skip_filter_plugins={"Ext"})
    assert fwk.run_add_pod(skipped, pod, other, node) is None
    removing = framework({"preFilter": ["Ext"]}, {"Ext": _Extension("remove")})
    status = removing.run_remove_pod(state, pod, other, node)
    assert status is not None and status.message() == 'running RemovePod on PreFilter plugin "Ext": cannot remove'


def test_add_pod_failure_while_adding_nominated_pods_fails_the_node_with_that_error() -> None:
    """``RunFilterPluginsWithNominatedPods``: ``addNominatedPods`` returning an error makes the
    node's status that Error (the cycle then aborts, as for any filter Error)."""
    nominated = pod_info("nominated", priority=10, nominated="n1")
    ext = _Extension("add")
    fwk = framework({"preFilter": ["Ext"], "filter": ["Ext"]}, {"Ext": ext}, _nominator({"n1": [nominated]}))
    node = NodeInfo.from_node(make_node("n1"))
    status = fwk.run_filter_with_nominated(CycleState(), pod_info("p"), node)
    assert status is not None and status.code == Code.ERROR
    assert status.message() == 'running AddPod on PreFilter plugin "Ext": cannot add'


def test_remove_pod_failure_in_a_dry_run_fails_preemption_with_that_error() -> None:
    """``SelectVictimsOnNode``: removing a potential victim runs RemovePod; its error is the node's
    status, and with no candidate ``Preempt`` returns it (no PostFilterResult)."""
    fwk = framework({"preFilter": ["Ext"], "filter": ["Ext"]}, {"Ext": _Extension("remove")})
    info = NodeInfo.from_node(make_node("n1"))
    info.add_pod(pod_info("v", priority=1, node="n1"))

    handle = FakeHandle([info], framework=fwk)
    plugin = DefaultPreemption({}, handle)
    result, status = plugin.post_filter(CycleState(), pod_info("p", priority=100),
                                        {"n1": Status.unschedulable("Insufficient cpu")})
    assert result is None and status.code == Code.ERROR
    assert status.message() == 'preemption: running RemovePod on PreFilter plugin "Ext": cannot remove'
    assert [r.outcome for r in handle.preemptions] == ["error"]


def test_default_preemption_on_the_fake_handle_preempts_through_its_cluster() -> None:
    """The kit's FakeHandle serves the whole preemption path: the dry run on the framework, the
    victim's DisruptionTarget condition, its deletion and the Preempted event on the handle's cluster,
    the decision record and the metrics."""
    victim = pod_info("v", priority=1, node="n1")
    info = NodeInfo.from_node(make_node("n1", cpu="1"))
    info.add_pod(victim)
    handle = FakeHandle([info], objects={"Pod": [victim.obj]})
    fit = NodeResourcesFit({}, handle)
    fwk = framework({"preFilter": ["NodeResourcesFit"], "filter": ["NodeResourcesFit"]}, {"NodeResourcesFit": fit})
    handle.framework = fwk
    preemptor, state = pod_info("p", priority=100), CycleState()
    fwk.run_pre_filter(state, preemptor)
    result, status = DefaultPreemption({}, handle).post_filter(state, preemptor,
                                                               {"n1": Status.unschedulable("Insufficient cpu")})
    assert result is not None and result.nominated_node_name == "n1" and status.is_success()
    writes = handle.cluster.writes  # type: ignore[attr-defined]
    assert [(verb, obj["metadata"]["name"]) for verb, obj, _ in writes] == [
        ("patch_pod_status", "v"), ("delete_pod", "v"), ("record_event", "v")]
    assert writes[0][2]["conditions"][0]["type"] == "DisruptionTarget"
    assert writes[2][2]["reason"] == "Preempted"
    assert [r.outcome for r in handle.preemptions] == ["preempted"]
    assert handle.metrics.preemption_attempts == 1


# -- the default plugins -----------------------------------------------------------------------------
def _protocol_members(protocol: type) -> set[str]:
    members = set(getattr(protocol, "__annotations__", {}))
    members |= {k for k, v in vars(protocol).items() if callable(v) and not k.startswith("_")}
    return members


def _declared_protocols(cls: type) -> list[type]:
    return [base for base in cls.__mro__[1:] if getattr(base, "_is_protocol", False)]


@pytest.mark.parametrize("name", sorted(plugin_registry()))
def test_every_registered_plugin_implements_the_protocols_it_declares(name: str) -> None:
    """Each protocol a plugin lists as a base is really implemented by the plugin (no member is left
    to the protocol's stub), so the isinstance checks that sort plugins cannot be fooled."""
    cls: Any = plugin_registry()[name]
    declared = _declared_protocols(cls)
    assert declared, f"{name} declares no extension point"
    for protocol in declared:
        for member in _protocol_members(protocol):
            owner = next(k for k in cls.__mro__ if member in vars(k))
            assert not getattr(owner, "_is_protocol", False), f"{name}.{member} is {protocol.__name__}'s stub"


def test_default_profile_plugins_implement_the_points_they_are_registered_for() -> None:
    """The v1.28 default multiPoint plugins, expanded to the points they implement: each is an
    instance of that point's protocol, and the points match upstream's default profile."""
    profile = build_profile({}, 0, lambda _name: FakeHandle())
    for point, names in profile.points.items():
        for name in names:
            assert isinstance(profile.plugins[name], EXTENSION_POINTS[point]), (point, name)
    assert profile.points["preFilter"] == ["NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions",
                                           "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
                                           "InterPodAffinity"]
    assert profile.points["postFilter"] == ["DefaultPreemption"]
    assert profile.points["preScore"] == ["NodeAffinity", "PodTopologySpread", "InterPodAffinity"]
    assert profile.points["score"] == ["TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread",
                                       "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality"]
    # DefaultPreemption's PreEnqueue (upstream's from 1.32) has a verdict only with SchedulerAsyncPreemption
    assert profile.points["preEnqueue"] == ["DefaultPreemption", "SchedulingGates"]
    assert profile.points["reserve"] == ["VolumeBinding"] and profile.points["bind"] == ["DefaultBinder"]
    assert profile.points["preBind"] == ["VolumeBinding"]
    assert {n for n, _ in DEFAULT_MULTIPOINT} == set(profile.plugins)
    fit = profile.plugins["NodeResourcesFit"]
    assert isinstance(fit, PreemptionArithmetic)
    independent = {n for n, pl in profile.plugins.items() if isinstance(pl, PodIndependentFilter)}
    assert independent == {"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "VolumeBinding",
                           "VolumeZone"}
    assert isinstance(profile.plugins["DefaultPreemption"], PreemptionPolicy)
    assert isinstance(profile.plugins["DefaultPreemption"], PostFilterDryRun)
