"""InterPodAffinity: behaviours pinned against upstream kube-scheduler v1.28."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.scheduler.framework.interface import (
    ADD,
    ALL,
    UPDATE_NODE_LABEL,
    ClusterEvent,
    Code,
    CycleState,
)
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.interpodaffinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    InterPodAffinity,
)
from kubesched.testkit.builders import make_node, make_pod
from kubesched.testkit.framework import FakeHandle, node_info, pod_info

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def term(labels: dict[str, str], key: str, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **extra}


def pod(name: str, labels: dict[str, str] | None = None, ns: str = "default", *,
        affinity: list[dict[str, Any]] | None = None, anti: list[dict[str, Any]] | None = None,
        pref_affinity: list[tuple[int, dict[str, Any]]] | None = None,
        pref_anti: list[tuple[int, dict[str, Any]]] | None = None, deleting: bool = False) -> PodInfo:
    spec: dict[str, Any] = {"containers": []}
    aff: dict[str, Any] = {}
    if affinity or pref_affinity:
        aff["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": affinity or [],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in pref_affinity or []],
        }
    if anti or pref_anti:
        aff["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": anti or [],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in pref_anti or []],
        }
    if aff:
        spec["affinity"] = aff
    return pod_info(make_pod(name, namespace=ns, uid=f"{ns}/{name}", labels=labels or {},
                             deletion_timestamp="2024-01-01T00:00:00Z" if deleting else None, **spec))


def node(name: str, labels: dict[str, str] | None = None, pods: tuple[PodInfo, ...] = ()) -> NodeInfo:
    """A node with exactly ``labels`` and no allocatable resources."""
    return node_info(make_node(name, cpu=None, memory=None, pods=None, labels=labels or {}, hostname=False,
                               capacity=None), *pods)


def zone_node(name: str, zone: str | None, *pods: PodInfo) -> NodeInfo:
    labels = {HOST: name}
    if zone is not None:
        labels[ZONE] = zone
    return node(name, labels, pods)


def run_filter(plugin: InterPodAffinity, incoming: PodInfo, nodes: list[NodeInfo]) -> dict[str, Any]:
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


def run_score(plugin: InterPodAffinity, incoming: PodInfo, nodes: list[NodeInfo]) -> tuple[list[int], list[int]]:
    state = CycleState()
    status = plugin.pre_score(state, incoming, nodes)
    if status is not None and status.is_skip():
        return [], []
    assert status is None
    raw = [plugin.score(state, incoming, n) for n in nodes]
    normalized = list(raw)
    plugin.normalize_score(state, incoming, nodes, normalized)
    return raw, normalized


U_AFF = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_AFFINITY_RULES_NOT_MATCH,))
U_ANTI = (Code.UNSCHEDULABLE, (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,))
U_EXISTING = (Code.UNSCHEDULABLE, (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,))


def make(nodes: list[NodeInfo], args: dict[str, Any] | None = None,
         ns_labels: dict[str, dict[str, str]] | None = None) -> InterPodAffinity:
    return InterPodAffinity(args or {}, FakeHandle(nodes, namespaces=ns_labels))


# ---------------------------------------------------------------------------------------------
# Filter
# ---------------------------------------------------------------------------------------------

def test_filter_first_pod_of_self_affine_group_may_go_to_any_node_with_the_topology_key() -> None:
    nodes = [zone_node("n1", "a"), zone_node("n2", None)]
    incoming = pod("web-0", {"app": "web"}, affinity=[term({"app": "web"}, ZONE)])
    assert run_filter(make(nodes), incoming, nodes) == {"n1": None, "n2": U_AFF}


def test_filter_first_pod_exception_requires_the_pod_to_match_its_own_terms() -> None:
    nodes = [zone_node("n1", "a")]
    incoming = pod("web-0", {"app": "web"}, affinity=[term({"app": "db"}, ZONE)])
    assert run_filter(make(nodes), incoming, nodes) == {"n1": U_AFF}


def test_filter_affinity_restricts_to_domains_holding_a_matching_pod() -> None:
    nodes = [zone_node("n1", "a", pod("db", {"app": "db"})), zone_node("n2", "a"), zone_node("n3", "b")]
    incoming = pod("web", {"app": "web"}, affinity=[term({"app": "db"}, ZONE)])
    assert run_filter(make(nodes), incoming, nodes) == {"n1": None, "n2": None, "n3": U_AFF}


def test_filter_first_pod_exception_ignores_matching_pods_on_nodes_without_the_key() -> None:
    # The matching pod sits on a node lacking the zone label, so the counts stay empty and the
    # self-matching pod may go to any zoned node.
    nodes = [zone_node("n1", None, pod("web-old", {"app": "web"})), zone_node("n2", "b")]
    incoming = pod("web", {"app": "web"}, affinity=[term({"app": "web"}, ZONE)])
    assert run_filter(make(nodes), incoming, nodes) == {"n1": U_AFF, "n2": None}


def test_filter_affinity_existing_pod_must_match_all_terms() -> None:
    nodes = [zone_node("n1", "a", pod("db", {"app": "db"})), zone_node("n2", "b", pod("c", {"tier": "x"}))]
    incoming = pod("web", {"app": "web"},
                   affinity=[term({"app": "db"}, ZONE), term({"tier": "x"}, HOST)])
    # No pod matches both terms and the incoming pod matches neither -> nothing fits.
    assert run_filter(make(nodes), incoming, nodes) == {"n1": U_AFF, "n2": U_AFF}


def test_filter_affinity_terms_default_to_the_pods_own_namespace() -> None:
    nodes = [zone_node("n1", "a", pod("db", {"app": "db"}, ns="other")), zone_node("n2", "b")]
    incoming = pod("web", {"app": "web"}, affinity=[term({"app": "db"}, ZONE)])
    assert run_filter(make(nodes), incoming, nodes) == {"n1": U_AFF, "n2": U_AFF}
    listed = pod("web", {"app": "web"}, affinity=[term({"app": "db"}, ZONE, namespaces=["other"])])
    assert run_filter(make(nodes), listed, nodes) == {"n1": None, "n2": U_AFF}


@pytest.mark.parametrize(
    ("ns_selector", "expected_n1"),
    [
        ({}, None),  # {} selects every namespace
        ({"matchLabels": {"team": "data"}}, None),
        ({"matchLabels": {"team": "web"}}, U_AFF),
    ],
)
def test_filter_affinity_namespace_selector_is_matched_against_namespace_labels(
    ns_selector: dict[str, Any], expected_n1: Any
) -> None:
    nodes = [zone_node("n1", "a", pod("db", {"app": "db"}, ns="other")), zone_node("n2", "b")]
    incoming = pod("web", {"app": "db"}, affinity=[term({"app": "db"}, ZONE, namespaceSelector=ns_selector)])
    plugin = make(nodes, ns_labels={"other": {"team": "data"}})
    result = run_filter(plugin, incoming, nodes)
    assert result["n1"] == expected_n1


def test_filter_incoming_anti_affinity_rejects_the_whole_topology_domain() -> None:
    nodes = [zone_node("n1", "a", pod("db", {"app": "db"})), zone_node("n2", "a"), zone_node("n3", "b")]
    incoming = pod("web", {"app": "web"}, anti=[term({"app": "db"}, ZONE)])
    assert run_filter(make(nodes), incoming, nodes) == {"n1": U_ANTI, "n2": U_ANTI, "n3": None}


def test_filter_anti_affinity_passes_nodes_without_the_topology_key() -> None:
    nodes = [zone_node("n1", "a", pod("db", {"app": "db"})), zone_node("n2", None)]
    incoming = pod("web", {"app": "web"}, anti=[term({"app": "db"}, ZONE)])
    assert run_filter(make(nodes), incoming, nodes) == {"n1": U_ANTI, "n2": None}


def test_filter_existing_pods_anti_affinity_is_symmetric() -> None:
    guard = pod("guard", {"app": "guard"}, anti=[term({"app": "web"}, HOST)])
    nodes = [zone_node("n1", "a", guard), zone_node("n2", "a")]
    incoming = pod("web", {"app": "web"})  # no affinity of its own
    assert run_filter(make(nodes), incoming, nodes) == {"n1": U_EXISTING, "n2": None}


def test_filter_existing_anti_affinity_uses_incoming_pods_namespace_labels() -> None:
    guard = pod("guard", {"app": "guard"}, ns="sys",
                anti=[term({"app": "web"}, HOST, namespaceSelector={"matchLabels": {"env": "prod"}})])
    nodes = [zone_node("n1", "a", guard)]
    incoming = pod("web", {"app": "web"}, ns="shop")
    assert run_filter(make(nodes, ns_labels={"shop": {"env": "prod"}}), incoming, nodes) == {"n1": U_EXISTING}
    assert run_filter(make(nodes, ns_labels={"shop": {"env": "dev"}}), incoming, nodes) == {"n1": "skip"}


def test_prefilter_skips_when_no_required_terms_and_no_matching_existing_anti_affinity() -> None:
    guard = pod("guard", {"app": "guard"}, anti=[term({"app": "other"}, HOST)])
    nodes = [zone_node("n1", "a", guard)]
    incoming = pod("web", {"app": "web"}, pref_affinity=[(10, term({"app": "x"}, HOST))])
    assert run_filter(make(nodes), incoming, nodes) == {"n1": "skip"}


def test_filter_checks_affinity_before_anti_affinity_before_existing_anti_affinity() -> None:
    guard = pod("guard", {"app": "guard"}, anti=[term({"app": "web"}, ZONE)])
    nodes = [zone_node("n1", "a", guard, pod("db", {"app": "db"})), zone_node("n2", "b", pod("db2", {"app": "db"}))]
    both = pod("web", {"app": "web"}, affinity=[term({"app": "cache"}, ZONE)], anti=[term({"app": "db"}, ZONE)])
    assert run_filter(make(nodes), both, nodes) == {"n1": U_AFF, "n2": U_AFF}
    anti_only = pod("web", {"app": "web"}, anti=[term({"app": "db"}, ZONE)])
    assert run_filter(make(nodes), anti_only, nodes) == {"n1": U_ANTI, "n2": U_ANTI}
    plain = pod("web", {"app": "web"})
    assert run_filter(make(nodes), plain, nodes) == {"n1": U_EXISTING, "n2": None}


def test_filter_counts_terminating_pods() -> None:
    nodes = [zone_node("n1", "a", pod("db", {"app": "db"}, deleting=True))]
    incoming = pod("web", {"app": "web"}, anti=[term({"app": "db"}, HOST)])
    assert run_filter(make(nodes), incoming, nodes) == {"n1": U_ANTI}


def test_filter_nil_label_selector_matches_nothing() -> None:
    nodes = [zone_node("n1", "a", pod("db", {"app": "db"}))]
    incoming = pod("web", {"app": "web"}, anti=[{"topologyKey": HOST}])
    assert run_filter(make(nodes), incoming, nodes) == {"n1": None}


# ---------------------------------------------------------------------------------------------
# AddPod / RemovePod on cloned state (preemption dry runs, nominated pods)
# ---------------------------------------------------------------------------------------------

def test_remove_pod_on_cloned_state_lifts_anti_affinity_only_in_the_clone() -> None:
    victim = pod("db", {"app": "db"})
    n1 = zone_node("n1", "a", victim)
    plugin = make([n1])
    incoming = pod("web", {"app": "web"}, anti=[term({"app": "db"}, HOST)])
    state = CycleState()
    assert plugin.pre_filter(state, incoming) == (None, None)
    assert plugin.filter(state, incoming, n1) is not None
    dry = state.clone()
    dry_node = n1.clone()
    dry_node.remove_pod(victim)
    assert plugin.remove_pod(dry, incoming, victim, dry_node) is None
    assert plugin.filter(dry, incoming, dry_node) is None
    st = plugin.filter(state, incoming, n1)
    assert st is not None and st.reasons == (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,)


def test_remove_pod_with_anti_affinity_lifts_existing_anti_affinity() -> None:
    guard = pod("guard", {"app": "guard"}, anti=[term({"app": "web"}, ZONE)])
    n1, n2 = zone_node("n1", "a", guard), zone_node("n2", "a")
    plugin = make([n1, n2])
    incoming = pod("web", {"app": "web"})
    state = CycleState()
    plugin.pre_filter(state, incoming)
    assert plugin.filter(state, incoming, n2) is not None
    dry = state.clone()
    plugin.remove_pod(dry, incoming, guard, n1)
    assert plugin.filter(dry, incoming, n2) is None
    assert plugin.filter(state, incoming, n2) is not None


def test_add_pod_of_nominated_pod_satisfies_affinity_and_triggers_anti_affinity() -> None:
    n1, n2 = zone_node("n1", "a", pod("x", {"app": "x"})), zone_node("n2", "b")
    plugin = make([n1, n2])
    incoming = pod("web", {"app": "web"}, affinity=[term({"app": "db"}, ZONE)],
                   anti=[term({"app": "cache"}, HOST)])
    state = CycleState()
    plugin.pre_filter(state, incoming)
    assert plugin.filter(state, incoming, n2).reasons == (ERR_REASON_AFFINITY_RULES_NOT_MATCH,)  # type: ignore[union-attr]
    dry = state.clone()
    plugin.add_pod(dry, incoming, pod("db", {"app": "db"}), n2)
    assert plugin.filter(dry, incoming, n2) is None
    plugin.add_pod(dry, incoming, pod("cache", {"app": "cache"}), n2)
    st = plugin.filter(dry, incoming, n2)
    assert st is not None and st.reasons == (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,)
    # the original state is untouched
    assert plugin.filter(state, incoming, n2).reasons == (ERR_REASON_AFFINITY_RULES_NOT_MATCH,)  # type: ignore[union-attr]


def test_add_pod_with_anti_affinity_against_incoming_pod_blocks_its_domain() -> None:
    n1, n2 = zone_node("n1", "a"), zone_node("n2", "b")
    plugin = make([n1, n2])
    incoming = pod("web", {"app": "web"}, anti=[term({"app": "nothing"}, HOST)])
    state = CycleState()
    plugin.pre_filter(state, incoming)
    dry = state.clone()
    plugin.add_pod(dry, incoming, pod("guard", {}, anti=[term({"app": "web"}, ZONE)]), n1)
    st = plugin.filter(dry, incoming, n1)
    assert st is not None and st.reasons == (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,)
    assert plugin.filter(dry, incoming, n2) is None


# ---------------------------------------------------------------------------------------------
# Score
# ---------------------------------------------------------------------------------------------

def score_nodes(extra: tuple[PodInfo, ...] = ()) -> list[NodeInfo]:
    return [
        zone_node("n1", "a", pod("db", {"app": "db"})),
        zone_node("n2", "a"),
        zone_node("n3", "b", pod("cache", {"app": "cache"})),
        zone_node("n4", "c", *extra),
    ]


def test_score_preferred_affinity_and_anti_affinity_weights_per_zone() -> None:
    nodes = score_nodes()
    incoming = pod("web", {"app": "web"}, pref_affinity=[(5, term({"app": "db"}, ZONE))],
                   pref_anti=[(3, term({"app": "cache"}, ZONE))])
    raw, normalized = run_score(make(nodes), incoming, nodes)
    assert raw == [5, 5, -3, 0]
    # floor(100 * (s - min) / (max - min)) with min -3, max 5
    assert normalized == [100, 100, 0, 37]


def test_score_existing_pods_required_affinity_counts_hard_pod_affinity_weight() -> None:
    fan = pod("fan", {"app": "fan"}, affinity=[term({"app": "web"}, ZONE)])
    nodes = score_nodes((fan,))
    incoming = pod("web", {"app": "web"}, pref_affinity=[(5, term({"app": "db"}, ZONE))],
                   pref_anti=[(3, term({"app": "cache"}, ZONE))])
    raw, normalized = run_score(make(nodes), incoming, nodes)
    assert raw == [5, 5, -3, 1]
    assert normalized == [100, 100, 0, 50]
    raw, _ = run_score(make(nodes, {"hardPodAffinityWeight": 7}), incoming, nodes)
    assert raw == [5, 5, -3, 7]
    raw, normalized = run_score(make(nodes, {"hardPodAffinityWeight": 0}), incoming, nodes)
    assert raw == [5, 5, -3, 0]
    assert normalized == [100, 100, 0, 37]


def test_score_existing_pods_preferred_terms_apply_to_incoming_pod() -> None:
    lover = pod("lover", {}, pref_affinity=[(4, term({"app": "web"}, HOST))])
    hater = pod("hater", {}, pref_anti=[(6, term({"app": "web"}, ZONE))])
    nodes = [zone_node("n1", "a", lover), zone_node("n2", "a"), zone_node("n3", "b", hater)]
    incoming = pod("web", {"app": "web"})
    raw, normalized = run_score(make(nodes), incoming, nodes)
    assert raw == [4, 0, -6]
    assert normalized == [100, 60, 0]


def test_score_ignore_preferred_terms_of_existing_pods_skips_without_own_preferences() -> None:
    lover = pod("lover", {}, pref_affinity=[(4, term({"app": "web"}, HOST))])
    nodes = [zone_node("n1", "a", lover), zone_node("n2", "a")]
    plugin = make(nodes, {"ignorePreferredTermsOfExistingPods": True})
    state = CycleState()
    st = plugin.pre_score(state, pod("web", {"app": "web"}), nodes)
    assert st is not None and st.is_skip()


def test_prescore_skips_when_nothing_to_score() -> None:
    nodes = [zone_node("n1", "a", pod("db", {"app": "db"})), zone_node("n2", "b")]
    state = CycleState()
    st = make(nodes).pre_score(state, pod("web", {"app": "web"}), nodes)
    assert st is not None and st.is_skip()


def test_normalize_all_equal_scores_become_zero() -> None:
    nodes = [zone_node("n1", "a", pod("db", {"app": "db"})), zone_node("n2", "a")]
    incoming = pod("web", {"app": "web"}, pref_affinity=[(5, term({"app": "db"}, ZONE))])
    raw, normalized = run_score(make(nodes), incoming, nodes)
    assert raw == [5, 5]
    assert normalized == [0, 0]


def test_score_nodes_with_no_labels_are_not_processed() -> None:
    nodes = [node("bare", {}, (pod("db", {"app": "db"}),)), zone_node("n2", "a")]
    incoming = pod("web", {"app": "web"}, pref_affinity=[(5, term({"app": "db"}, ZONE))])
    state = CycleState()
    st = make(nodes).pre_score(state, incoming, nodes)
    assert st is not None and st.is_skip()


# ---------------------------------------------------------------------------------------------
# Args and events
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [{"hardPodAffinityWeight": -1}, {"hardPodAffinityWeight": 101},
                                  {"hardPodAffinityWeight": "1"}, {"bogus": 1},
                                  {"ignorePreferredTermsOfExistingPods": "yes"}])
def test_invalid_args_raise(args: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        make([], args)


def test_default_args() -> None:
    plugin = make([])
    assert plugin.hard_pod_affinity_weight == 1
    assert plugin.ignore_preferred_terms_of_existing_pods is False


def test_events_to_register() -> None:
    assert make([]).events_to_register() == [
        ClusterEvent("Pod", ALL),
        ClusterEvent("Node", ADD | UPDATE_NODE_LABEL),
    ]
