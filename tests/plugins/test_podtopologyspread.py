"""PodTopologySpread: behaviours pinned against upstream kube-scheduler v1.28."""

from __future__ import annotations

import math
from typing import Any

import pytest

from kubesched.scheduler.framework.interface import (
    ADD,
    ALL,
    DELETE,
    UPDATE_NODE_LABEL,
    ClusterEvent,
    Code,
    CycleState,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.podtopologyspread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
)
from kubesched.scheduler.plugins.podtopologyspread.plugin import _round_half_away
from kubesched.testkit.builders import make_node, make_pod
from kubesched.testkit.framework import FakeHandle, node_info, pod_info

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
WEB = {"app": "web"}


def tsc(key: str, max_skew: int = 1, action: str = "DoNotSchedule", selector: dict[str, Any] | None = None,
        **extra: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": action, **extra}
    c["labelSelector"] = {"matchLabels": dict(WEB)} if selector is None else selector
    return c


def pod(name: str, labels: dict[str, str] | None = None, ns: str = "default", *,
        constraints: list[dict[str, Any]] | None = None, deleting: bool = False,
        spec: dict[str, Any] | None = None, owner: dict[str, Any] | None = None) -> PodInfo:
    full_spec: dict[str, Any] = {"containers": [], **(spec or {})}
    if constraints:
        full_spec["topologySpreadConstraints"] = constraints
    return pod_info(make_pod(name, namespace=ns, uid=f"{ns}/{name}", labels=dict(WEB) if labels is None else labels,
                             deletion_timestamp="2024-01-01T00:00:00Z" if deleting else None,
                             owner_references=[owner] if owner else None, **full_spec))


def node(name: str, zone: str | None, *pods: PodInfo, labels: dict[str, str] | None = None,
         taints: list[dict[str, Any]] | None = None) -> NodeInfo:
    all_labels = {**(labels or {}), **({ZONE: zone} if zone is not None else {})}
    return node_info(make_node(name, cpu=None, memory=None, pods=None, labels=all_labels, capacity=None,
                               taints=taints), *pods)


def web(n: int, prefix: str, **kw: Any) -> tuple[PodInfo, ...]:
    return tuple(pod(f"{prefix}-{i}", **kw) for i in range(n))


def make(nodes: list[NodeInfo], args: dict[str, Any] | None = None,
         objects: dict[str, list[dict[str, Any]]] | None = None) -> PodTopologySpread:
    return PodTopologySpread(args or {}, FakeHandle(nodes, objects=objects))


UNSCHED = (Code.UNSCHEDULABLE, (ERR_REASON_CONSTRAINTS_NOT_MATCH,))
MISSING = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_NODE_LABEL_NOT_MATCH,))


def run_filter(plugin: PodTopologySpread, incoming: PodInfo, nodes: list[NodeInfo]) -> dict[str, Any]:
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming)
    if status is not None and status.is_skip():
        return {n.name: "skip" for n in nodes}
    assert status is None
    out: dict[str, Any] = {}
    for n in nodes:
        st = plugin.filter(state, incoming, n)
        out[n.name] = None if st is None else (st.code, st.reasons)
    return out


def run_score(plugin: PodTopologySpread, incoming: PodInfo, nodes: list[NodeInfo]) -> tuple[list[int], list[int]]:
    state = CycleState()
    status = plugin.pre_score(state, incoming, nodes)
    if status is not None and status.is_skip():
        return [], []
    assert status is None
    raw = [plugin.score(state, incoming, n) for n in nodes]
    normalized = list(raw)
    plugin.normalize_score(state, incoming, nodes, normalized)
    return raw, normalized


# ---------------------------------------------------------------------------------------------
# Filter
# ---------------------------------------------------------------------------------------------

def test_filter_zone_skew_uses_global_minimum_over_domains() -> None:
    # zone a holds 3 matching pods (n1: 2, n2: 1), zone b holds 1: min = 1.
    nodes = [node("n1", "a", *web(2, "p1")), node("n2", "a", *web(1, "p2")), node("n3", "b", *web(1, "p3"))]
    incoming = pod("new", constraints=[tsc(ZONE)])
    assert run_filter(make(nodes), incoming, nodes) == {"n1": UNSCHED, "n2": UNSCHED, "n3": None}
    loose = pod("new", constraints=[tsc(ZONE, max_skew=3)])
    assert run_filter(make(nodes), loose, nodes) == {"n1": None, "n2": None, "n3": None}


def test_filter_incoming_pod_not_matching_selector_adds_no_self_match() -> None:
    nodes = [node("n1", "a", *web(2, "p1")), node("n2", "b", *web(1, "p2"))]
    other = pod("new", {"app": "other"}, constraints=[tsc(ZONE)])
    assert run_filter(make(nodes), other, nodes) == {"n1": None, "n2": None}


def test_filter_node_missing_topology_label_is_unresolvable() -> None:
    nodes = [node("n1", "a"), node("n2", None)]
    incoming = pod("new", constraints=[tsc(ZONE)])
    assert run_filter(make(nodes), incoming, nodes) == {"n1": None, "n2": MISSING}


def test_filter_min_domains_treats_global_minimum_as_zero_when_too_few_domains() -> None:
    nodes = [node("n1", "a", *web(1, "p1")), node("n2", "b", *web(1, "p2"))]
    plain = pod("new", constraints=[tsc(ZONE)])
    assert run_filter(make(nodes), plain, nodes) == {"n1": None, "n2": None}
    with_min = pod("new", constraints=[tsc(ZONE, minDomains=3)])
    assert run_filter(make(nodes), with_min, nodes) == {"n1": UNSCHED, "n2": UNSCHED}
    enough = pod("new", constraints=[tsc(ZONE, minDomains=2)])
    assert run_filter(make(nodes), enough, nodes) == {"n1": None, "n2": None}


def test_filter_domains_with_zero_matching_pods_count_for_the_minimum() -> None:
    nodes = [node("n1", "a", *web(1, "p1")), node("n2", "b")]
    incoming = pod("new", constraints=[tsc(HOST)])
    assert run_filter(make(nodes), incoming, nodes) == {"n1": UNSCHED, "n2": None}


def test_filter_ignores_terminating_pods_and_other_namespaces() -> None:
    gone = web(3, "gone", deleting=True)
    foreign = web(3, "foreign", ns="other")
    nodes = [node("n1", "a", *gone, *foreign), node("n2", "b")]
    incoming = pod("new", constraints=[tsc(ZONE)])
    assert run_filter(make(nodes), incoming, nodes) == {"n1": None, "n2": None}


def test_filter_empty_label_selector_counts_no_pods_but_self_matches() -> None:
    nodes = [node("n1", "a", *web(5, "p1")), node("n2", "b")]
    incoming = pod("new", constraints=[tsc(ZONE, selector={})])
    assert run_filter(make(nodes), incoming, nodes) == {"n1": None, "n2": None}


def test_filter_nil_label_selector_matches_nothing() -> None:
    nodes = [node("n1", "a", *web(5, "p1")), node("n2", "b")]
    c = tsc(ZONE)
    del c["labelSelector"]
    assert run_filter(make(nodes), pod("new", constraints=[c]), nodes) == {"n1": None, "n2": None}


def test_filter_node_affinity_policy_honor_excludes_non_matching_nodes_from_domains() -> None:
    nodes = [node("n1", "a", *web(1, "p1"), labels={"disk": "ssd"}), node("n2", "b", labels={"disk": "hdd"})]
    honor = pod("new", constraints=[tsc(ZONE)], spec={"nodeSelector": {"disk": "ssd"}})
    assert run_filter(make(nodes), honor, nodes)["n1"] is None  # domains {a: 1}, min 1
    ignore = pod("new", constraints=[tsc(ZONE, nodeAffinityPolicy="Ignore")], spec={"nodeSelector": {"disk": "ssd"}})
    assert run_filter(make(nodes), ignore, nodes)["n1"] == UNSCHED  # domains {a: 1, b: 0}, min 0


def test_filter_node_taints_policy_honor_excludes_untolerated_nodes_from_domains() -> None:
    taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    nodes = [node("n1", "a", *web(1, "p1")), node("n2", "b", taints=[taint])]
    default_ignore = pod("new", constraints=[tsc(ZONE)])
    assert run_filter(make(nodes), default_ignore, nodes)["n1"] == UNSCHED
    honor = pod("new", constraints=[tsc(ZONE, nodeTaintsPolicy="Honor")])
    assert run_filter(make(nodes), honor, nodes)["n1"] is None
    tolerating = pod("new", constraints=[tsc(ZONE, nodeTaintsPolicy="Honor")],
                     spec={"tolerations": [{"key": "dedicated", "operator": "Exists"}]})
    assert run_filter(make(nodes), tolerating, nodes)["n1"] == UNSCHED


def test_filter_match_label_keys_narrow_the_selector_to_the_pods_values() -> None:
    v1 = web(2, "v1", labels={"app": "web", "rev": "1"})
    nodes = [node("n1", "a", *v1), node("n2", "b")]
    incoming = pod("new", {"app": "web", "rev": "2"}, constraints=[tsc(ZONE, matchLabelKeys=["rev"])])
    assert run_filter(make(nodes), incoming, nodes) == {"n1": None, "n2": None}
    without = pod("new", {"app": "web", "rev": "2"}, constraints=[tsc(ZONE)])
    assert run_filter(make(nodes), without, nodes) == {"n1": UNSCHED, "n2": None}


def test_filter_multiple_constraints_are_anded_and_checked_in_order() -> None:
    nodes = [node("n1", "a", *web(2, "p1")), node("n2", "b"), node("n3", None)]
    incoming = pod("new", constraints=[tsc(HOST), tsc(ZONE)])
    # n3 lacks the zone label, so no node has all keys for counting except n1/n2.
    assert run_filter(make(nodes), incoming, nodes) == {"n1": UNSCHED, "n2": None, "n3": MISSING}


def test_prefilter_skips_pod_without_hard_constraints() -> None:
    nodes = [node("n1", "a")]
    soft = pod("new", constraints=[tsc(ZONE, action="ScheduleAnyway")])
    assert run_filter(make(nodes), soft, nodes) == {"n1": "skip"}
    assert run_filter(make(nodes), pod("bare"), nodes) == {"n1": "skip"}


# ---------------------------------------------------------------------------------------------
# AddPod / RemovePod on cloned state
# ---------------------------------------------------------------------------------------------

def test_remove_pod_on_cloned_state_changes_outcome_only_in_the_clone() -> None:
    victim = pod("victim")
    n1, n2 = node("n1", "a", victim), node("n2", "b")
    plugin = make([n1, n2])
    incoming = pod("new", constraints=[tsc(HOST)])
    state = CycleState()
    assert plugin.pre_filter(state, incoming) == (None, None)
    assert plugin.filter(state, incoming, n1) is not None
    dry = state.clone()
    assert plugin.remove_pod(dry, incoming, victim, n1) is None
    assert plugin.filter(dry, incoming, n1) is None
    st = plugin.filter(state, incoming, n1)
    assert st is not None and st.reasons == (ERR_REASON_CONSTRAINTS_NOT_MATCH,)


def test_add_pod_of_nominated_pod_raises_its_domain_count() -> None:
    n1, n2 = node("n1", "a"), node("n2", "b")
    plugin = make([n1, n2])
    incoming = pod("new", constraints=[tsc(ZONE)])
    state = CycleState()
    plugin.pre_filter(state, incoming)
    dry = state.clone()
    plugin.add_pod(dry, incoming, pod("nominated"), n1)
    assert plugin.filter(dry, incoming, n1) is not None
    assert plugin.filter(dry, incoming, n2) is None
    assert plugin.filter(state, incoming, n1) is None
    # pods of another namespace or not matching the selector are not counted
    plugin.add_pod(dry, incoming, pod("x", ns="other"), n2)
    plugin.add_pod(dry, incoming, pod("y", {"app": "other"}), n2)
    assert plugin.filter(dry, incoming, n2) is None


def test_add_pod_on_a_node_outside_the_inclusion_policies_counts_nothing() -> None:
    """Upstream ``updateWithPod`` applies the node inclusion policies too: a nominated pod on a
    node the incoming pod's node selector excludes (nodeAffinityPolicy Honor) opens no domain."""
    n1 = node("n1", "a", *web(2, "p1"), labels={"disk": "ssd"})
    n2 = node("n2", "b", labels={"disk": "hdd"})
    plugin = make([n1, n2])
    incoming = pod("new", constraints=[tsc(ZONE, max_skew=1)], spec={"nodeSelector": {"disk": "ssd"}})
    state = CycleState()
    plugin.pre_filter(state, incoming)
    assert plugin.filter(state, incoming, n1) is None  # domains {a: 2}: 2 + 1 - 2
    dry = state.clone()
    plugin.add_pod(dry, incoming, pod("nominated"), n2)
    assert plugin.filter(dry, incoming, n1) is None  # still {a: 2}: zone b is not counted
    ignoring = pod("new", constraints=[tsc(ZONE, max_skew=2, nodeAffinityPolicy="Ignore")],
                   spec={"nodeSelector": {"disk": "ssd"}})
    state = CycleState()
    plugin.pre_filter(state, ignoring)
    assert plugin.filter(state, ignoring, n1) is not None  # {a: 2, b: 0}: 2 + 1 - 0 > 2
    dry = state.clone()
    plugin.add_pod(dry, ignoring, pod("nominated"), n2)
    assert plugin.filter(dry, ignoring, n1) is None  # {a: 2, b: 1}: 2 + 1 - 1


def test_add_then_remove_restores_the_minimum() -> None:
    n1, n2, n3 = node("n1", "a", pod("a1")), node("n2", "b", pod("b1")), node("n3", "c", pod("c1"), pod("c2"))
    plugin = make([n1, n2, n3])
    incoming = pod("new", constraints=[tsc(ZONE)])
    state = CycleState()
    plugin.pre_filter(state, incoming)
    dry = state.clone()
    extra = pod("extra")
    plugin.add_pod(dry, incoming, extra, n1)
    plugin.add_pod(dry, incoming, pod("extra2"), n1)
    assert plugin.filter(dry, incoming, n2) is None  # min still 1 (zone b)
    assert plugin.filter(dry, incoming, n3) is not None  # 2 + 1 - 1 = 2
    plugin.remove_pod(dry, incoming, pod("b1"), n2)
    assert plugin.filter(dry, incoming, n1) is not None  # 3 + 1 - 0
    assert plugin.filter(dry, incoming, n2) is None


# ---------------------------------------------------------------------------------------------
# Score
# ---------------------------------------------------------------------------------------------

def test_score_soft_constraints_with_topology_normalizing_weight() -> None:
    nodes = [node("n1", "a", *web(2, "p1")), node("n2", "a", *web(1, "p2")), node("n3", "b")]
    incoming = pod("new", constraints=[tsc(ZONE, action="ScheduleAnyway"),
                                       tsc(HOST, max_skew=2, action="ScheduleAnyway")])
    raw, normalized = run_score(make(nodes), incoming, nodes)
    # zone: 2 domains -> ln 4; hostname: 3 nodes -> ln 5 (+ maxSkew - 1 = 1)
    z, h = math.log(4), math.log(5)
    assert raw == [round(3 * z + 2 * h + 1), round(3 * z + h + 1), round(1.0)] == [8, 7, 1]
    # 100 * (max + min - s) / max with max 8, min 1
    assert normalized == [12, 25, 100]


def test_score_nodes_missing_a_key_are_ignored_and_normalized_to_zero() -> None:
    nodes = [node("n1", "a", *web(1, "p1")), node("n2", "b"), node("n3", None)]
    incoming = pod("new", constraints=[tsc(ZONE, action="ScheduleAnyway")])
    raw, normalized = run_score(make(nodes), incoming, nodes)
    assert raw == [1, 0, 0]  # 1 * ln 4 = 1.39 -> 1
    assert normalized == [0, 100, 0]


def test_score_all_zero_normalizes_to_max() -> None:
    nodes = [node("n1", "a"), node("n2", "b")]
    incoming = pod("new", constraints=[tsc(ZONE, action="ScheduleAnyway")])
    assert run_score(make(nodes), incoming, nodes) == ([0, 0], [100, 100])


def test_score_hard_constraints_do_not_score_and_prescore_skips() -> None:
    nodes = [node("n1", "a"), node("n2", "b")]
    state = CycleState()
    st = make(nodes).pre_score(state, pod("new", constraints=[tsc(ZONE)]), nodes)
    assert st is not None and st.is_skip()


SERVICE = {"metadata": {"name": "svc", "namespace": "default"}, "spec": {"selector": dict(WEB)}}


def test_system_default_constraints_use_service_selector_and_tolerate_missing_zone() -> None:
    nodes = [node("n1", "a", *web(2, "p1")), node("n2", "a"), node("n3", None, *web(1, "p3"))]
    plugin = make(nodes, objects={"Service": [SERVICE]})
    incoming = pod("new")
    raw, normalized = run_score(plugin, incoming, nodes)
    # hostname maxSkew 3: ln 5 per pod + 2; zone maxSkew 5 over domains {a, ""}: ln 4 per pod + 4
    h, z = math.log(5), math.log(4)
    assert raw == [_round_half_away(2 * h + 2 + 2 * z + 4), _round_half_away(2 + 2 * z + 4),
                   _round_half_away(h + 2)] == [12, 9, 4]
    assert normalized == [33, 58, 100]
    # the defaults are ScheduleAnyway only: Filter is skipped
    assert run_filter(plugin, incoming, nodes) == {"n1": "skip", "n2": "skip", "n3": "skip"}


def test_system_defaults_skip_bare_pods() -> None:
    nodes = [node("n1", "a"), node("n2", "b")]
    other_ns = {"metadata": {"name": "svc", "namespace": "other"}, "spec": {"selector": dict(WEB)}}
    nil_selector = {"metadata": {"name": "headless", "namespace": "default"}, "spec": {}}
    plugin = make(nodes, objects={"Service": [other_ns, nil_selector]})
    assert run_score(plugin, pod("new"), nodes) == ([], [])


def test_default_selector_combines_services_and_controller_selectors() -> None:
    rs = {"metadata": {"name": "rs1", "namespace": "default"},
          "spec": {"selector": {"matchLabels": {"app": "web"},
                                "matchExpressions": [{"key": "rev", "operator": "In", "values": ["1", "2"]}]}}}
    svc = {"metadata": {"name": "svc", "namespace": "default"}, "spec": {"selector": {"tier": "front"}}}
    plugin = make([], objects={"ReplicaSet": [rs], "Service": [svc]})
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs1", "controller": True, "uid": "u"}
    sel = plugin.default_selector(pod("new", {"app": "web", "tier": "front", "rev": "1"}, owner=owner))
    assert sel.matches({"app": "web", "tier": "front", "rev": "2"})
    assert not sel.matches({"app": "web", "tier": "front", "rev": "3"})
    assert not sel.matches({"app": "web", "rev": "1"})
    not_controller = dict(owner, controller=False)
    sel = plugin.default_selector(pod("new", {"app": "web", "tier": "front"}, owner=not_controller))
    assert sel.matches({"tier": "front"})


def test_list_defaulting_uses_configured_constraints_and_requires_all_keys() -> None:
    args = {"defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]}
    nodes = [node("n1", "a", *web(1, "p1")), node("n2", "b"), node("n3", None)]
    plugin = make(nodes, args, objects={"Service": [SERVICE]})
    assert run_filter(plugin, pod("new"), nodes) == {"n1": UNSCHED, "n2": None, "n3": MISSING}


# ---------------------------------------------------------------------------------------------
# Args, events, helpers
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    {"defaultingType": "Bogus"},
    {"defaultingType": "System", "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE,
                                                           "whenUnsatisfiable": "DoNotSchedule"}]},
    {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 0, "topologyKey": ZONE,
                                                         "whenUnsatisfiable": "DoNotSchedule"}]},
    {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "",
                                                         "whenUnsatisfiable": "DoNotSchedule"}]},
    {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE,
                                                         "whenUnsatisfiable": "Maybe"}]},
    {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE,
                                                         "whenUnsatisfiable": "DoNotSchedule",
                                                         "labelSelector": {}}]},
    {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 2, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]},
    {"unknownField": 1},
])
def test_invalid_args_raise(args: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        make([], args)


def test_a_default_constraint_field_of_the_wrong_type_is_named() -> None:
    args = {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "minDomains": "x"}]}
    with pytest.raises(ValueError, match=r"defaultConstraints\[0\]\.minDomains: Invalid value: 'x'"):
        make([], args)


def test_default_args_are_system_defaulting() -> None:
    plugin = make([])
    assert plugin.system_defaulted
    assert [(c["topologyKey"], c["maxSkew"]) for c in plugin.default_constraints] == [(HOST, 3), (ZONE, 5)]


def test_events_to_register() -> None:
    assert make([]).events_to_register() == [
        ClusterEvent("Pod", ALL),
        ClusterEvent("Node", ADD | DELETE | UPDATE_NODE_LABEL),
    ]


@pytest.mark.parametrize(("x", "expected"), [(0.5, 1), (1.49, 1), (2.5, 3), (0.49999999999999994, 0)])
def test_score_rounding_is_half_away_from_zero(x: float, expected: int) -> None:
    assert _round_half_away(x) == expected


def test_remove_pod_does_not_check_terminating_so_a_terminating_victim_lowers_the_count() -> None:
    # Upstream quirk: PreFilter ignores terminating pods, but RemovePod decrements regardless.
    dying = pod("dying", deleting=True)
    n1, n2 = node("n1", "a", dying, pod("live")), node("n2", "b", pod("b1"))
    plugin = make([n1, n2])
    incoming = pod("new", constraints=[tsc(ZONE)])
    state = CycleState()
    plugin.pre_filter(state, incoming)
    assert plugin.filter(state, incoming, n1) is None  # 1 + 1 - 1
    dry = state.clone()
    plugin.remove_pod(dry, incoming, dying, n1)
    assert plugin.filter(dry, incoming, n2) is not None  # a: 0 -> min 0, b: 1 + 1 - 0 = 2
