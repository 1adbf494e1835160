"""Differential tests: InterPodAffinity's PreFilter and PreScore counts from the node table's pod
groups equal the pod-by-pod reference on generated clusters (nodes with and without the topology
keys, pods of several namespaces and labels with required and preferred (anti-)affinity, some being
deleted, namespace selectors), also after pods come and go (the groups stay in step)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler.cache import Cache
from kubesched.scheduler.framework.interface import CycleState
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.plugins.interpodaffinity import (
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    InterPodAffinity,
    PreFilterState,
    PreScoreState,
)
from kubesched.testkit.builders import make_node, make_pod
from kubesched.testkit.framework import FakeHandle

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
KEYS = [ZONE, HOST, "rack"]
NAMES = [f"n{i}" for i in range(6)]
VALUES = ["web", "db", ""]
NAMESPACES = {"default": {"team": "a"}, "other": {"team": "b"}}

node_labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(["a", "b", "c"]), max_size=3)
labels_st = st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(VALUES), max_size=2)
selector_st = st.one_of(
    st.builds(lambda ml: {"matchLabels": ml}, labels_st),
    st.builds(lambda k, op: {"matchExpressions": [{"key": k, "operator": op}]}, st.sampled_from(["app", "tier"]),
              st.sampled_from(["Exists", "DoesNotExist"])),
)
term_st = st.builds(
    lambda sel, key, ns: {"labelSelector": sel, "topologyKey": key, **ns},
    selector_st, st.sampled_from(KEYS),
    st.sampled_from([{}, {"namespaces": ["default"]}, {"namespaces": ["other", "default"]},
                     {"namespaceSelector": {}}, {"namespaceSelector": {"matchLabels": {"team": "b"}}}]),
)
weighted_st = st.builds(lambda w, t: {"weight": w, "podAffinityTerm": t}, st.integers(1, 100), term_st)
affinity_st = st.one_of(st.none(), st.fixed_dictionaries({}, optional={
    "podAffinity": st.fixed_dictionaries({}, optional={
        "requiredDuringSchedulingIgnoredDuringExecution": st.lists(term_st, min_size=1, max_size=2),
        "preferredDuringSchedulingIgnoredDuringExecution": st.lists(weighted_st, min_size=1, max_size=2)}),
    "podAntiAffinity": st.fixed_dictionaries({}, optional={
        "requiredDuringSchedulingIgnoredDuringExecution": st.lists(term_st, min_size=1, max_size=2),
        "preferredDuringSchedulingIgnoredDuringExecution": st.lists(weighted_st, min_size=1, max_size=2)}),
}))
# (node position, labels, namespace, being deleted, affinity); a few shapes repeat so groups form
existing_st = st.tuples(st.integers(0, len(NAMES) - 1), labels_st, st.sampled_from(list(NAMESPACES)), st.booleans(),
                        affinity_st)
incoming_st = st.tuples(labels_st, st.sampled_from(list(NAMESPACES)), affinity_st)
change_st = st.tuples(st.sampled_from(["add", "remove"]), st.integers(0, 20), st.integers(0, len(NAMES) - 1))


def pod(i: int | str, node: str | None, labels: dict[str, str], ns: str, deleting: bool,
        affinity: dict[str, Any] | None) -> PodInfo:
    spec: dict[str, Any] = {"affinity": affinity} if affinity else {}
    obj = make_pod(f"p{i}", namespace=ns, uid=f"uid-{i}", labels=labels, node=node,
                   deletion_timestamp="2024-01-01T00:00:00Z" if deleting else None, **spec)
    return PodInfo.from_pod(obj)


def build(nodes: list[dict[str, str]], pods: list[tuple[Any, ...]]) -> tuple[Cache, dict[int, PodInfo]]:
    cache = Cache()
    for i, labels in enumerate(nodes):
        node = make_node(NAMES[i], hostname=False)
        node["metadata"]["labels"] = dict(labels)
        cache.add_node(node)
    placed = {}
    for i, (at, labels, ns, deleting, affinity) in enumerate(pods):
        placed[i] = pod(i, NAMES[at % len(nodes)], labels, ns, deleting, affinity)
        cache.add_pod(placed[i])
    cache.update_snapshot()
    return cache, placed


def plugins(cache: Cache, args: dict[str, Any]) -> tuple[InterPodAffinity, InterPodAffinity]:
    grouped = InterPodAffinity(args, FakeHandle(cache, namespaces=NAMESPACES))
    reference = InterPodAffinity(args, FakeHandle(cache, namespaces=NAMESPACES))
    reference.per_pod = True
    return grouped, reference


def pre_filter_view(state: CycleState) -> Any:
    s = state.read(PRE_FILTER_STATE_KEY)
    if not isinstance(s, PreFilterState):
        return None
    return dict(s.existing_anti), dict(s.affinity), dict(s.anti)


def pre_score_view(state: CycleState) -> Any:
    s = state.read(PRE_SCORE_STATE_KEY)
    if not isinstance(s, PreScoreState):
        return None
    return s.topology_score


def assert_equal(grouped: InterPodAffinity, reference: InterPodAffinity, incoming: PodInfo, cache: Cache) -> None:
    state, ref_state = CycleState(), CycleState()
    result, status = grouped.pre_filter(state, incoming)
    ref_result, ref_status = reference.pre_filter(ref_state, incoming)
    assert result == ref_result
    assert (status.code, status.reasons) == (ref_status.code, ref_status.reasons) if status and ref_status \
        else status is ref_status is None
    if status is None:
        # the vector Filter reads the counts by label code, before anything turns them into pairs
        mask = grouped.filter_vector(state, incoming, cache)
        assert mask is not None
        assert mask.tolist() == [reference.filter(ref_state, incoming, n) is None for n in cache.node_infos]
    assert pre_filter_view(state) == pre_filter_view(ref_state)
    if status is None:
        for node in cache.node_infos:
            assert grouped.filter(state, incoming, node) == reference.filter(ref_state, incoming, node)
    state, ref_state = CycleState(), CycleState()
    status = grouped.pre_score(state, incoming, cache.node_infos)
    ref_status = reference.pre_score(ref_state, incoming, cache.node_infos)
    assert (status is None) == (ref_status is None)
    if status is not None and ref_status is not None:
        assert (status.code, status.reasons) == (ref_status.code, ref_status.reasons)
    assert pre_score_view(state) == pre_score_view(ref_state)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(nodes=st.lists(node_labels_st, min_size=1, max_size=len(NAMES)), pods=st.lists(existing_st, max_size=16),
       incoming=incoming_st, changes=st.lists(change_st, max_size=4),
       args=st.sampled_from([{}, {"hardPodAffinityWeight": 0}, {"hardPodAffinityWeight": 7}]))
def test_grouped_counts_equal_the_pod_by_pod_reference(nodes, pods, incoming, changes, args) -> None:
    cache, placed = build(nodes, pods)
    labels, ns, affinity = incoming
    x = pod("x", None, labels, ns, False, affinity)
    grouped, reference = plugins(cache, args)
    assert_equal(grouped, reference, x, cache)
    for what, i, at in changes:
        if what == "remove" and i in placed:
            cache.remove_pod(placed.pop(i))
        elif what == "add" and i not in placed:
            shape = pods[i % len(pods)] if pods else (0, {"app": "web"}, "default", False, None)
            placed[i] = pod(i, NAMES[at % len(nodes)], shape[1], shape[2], False, shape[4])
            cache.add_pod(placed[i])
        cache.update_snapshot()
        assert_equal(grouped, reference, x, cache)


def test_the_grouped_counts_are_used_on_a_snapshot_with_a_table() -> None:
    """The reference is not what runs: the pod-by-pod loops are skipped when the table answers."""
    cache, _ = build([{ZONE: "a"}], [(0, {"app": "web"}, "default", False,
                                     {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                                         {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ZONE}]}})])
    grouped, _ = plugins(cache, {})
    cache.have_pods_with_required_anti_affinity  # noqa: B018 - the lists are built; the plugin must not need them
    calls: list[str] = []
    original = type(cache).have_pods_with_required_anti_affinity
    try:
        type(cache).have_pods_with_required_anti_affinity = property(  # type: ignore[method-assign,assignment]
            lambda self: calls.append("lists") or original.fget(self))  # type: ignore[attr-defined]
        state = CycleState()
        grouped.pre_filter(state, pod("x", None, {"app": "web"}, "default", False, None))
    finally:
        type(cache).have_pods_with_required_anti_affinity = original  # type: ignore[method-assign]
    assert calls == []
    assert pre_filter_view(state)[0] == {(ZONE, "a"): 1}
