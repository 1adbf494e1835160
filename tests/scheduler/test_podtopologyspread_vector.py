"""Differential tests: PodTopologySpread's counts over the node table and its vector Filter, Score
and NormalizeScore equal the per-node reference on generated clusters (nodes with and without
the topology keys, pods of several namespaces and labels, some being deleted), also after pods
come and go (the table's pod groups stay in step with the nodes)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler.cache import Cache
from kubesched.scheduler.framework.interface import CycleState, Status
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.plugins.podtopologyspread import (
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    PodTopologySpread,
    PreFilterState,
    PreScoreState,
)
from kubesched.testkit.builders import make_node, make_pod, make_replicaset, make_taint
from kubesched.testkit.framework import FakeHandle

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
RACK = "rack"
KEYS = [ZONE, HOST, RACK]
NAMES = [f"n{i}" for i in range(7)]
APP_VALUES = ["web", "db", ""]

node_st = st.fixed_dictionaries({
    "labels": st.dictionaries(st.sampled_from(KEYS + ["disk"]), st.sampled_from(["a", "b", "c", ""]), max_size=4),
    "taint": st.sampled_from([None, "NoSchedule", "PreferNoSchedule", "NoExecute"]),
})
pod_labels_st = st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(APP_VALUES), max_size=2)
existing_st = st.tuples(st.integers(0, len(NAMES) - 1), pod_labels_st, st.sampled_from(["default", "other"]),
                        st.booleans())
selector_st = st.one_of(
    st.none(),
    st.builds(lambda ml: {"matchLabels": ml}, st.dictionaries(st.sampled_from(["app", "tier"]),
                                                              st.sampled_from(APP_VALUES), max_size=2)),
    st.builds(lambda k, op: {"matchExpressions": [{"key": k, "operator": op}]}, st.sampled_from(["app", "tier"]),
              st.sampled_from(["Exists", "DoesNotExist"])),
    st.builds(lambda vs: {"matchExpressions": [{"key": "app", "operator": "In", "values": vs}]},
              st.lists(st.sampled_from(APP_VALUES), min_size=1, max_size=2)),
)
constraint_st = st.builds(
    lambda key, skew, action, sel, extra: {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": action,
                                           **({"labelSelector": sel} if sel is not None else {}), **extra},
    st.sampled_from(KEYS), st.integers(1, 3), st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]), selector_st,
    st.fixed_dictionaries({}, optional={
        "minDomains": st.integers(1, 4),
        "nodeAffinityPolicy": st.sampled_from(["Honor", "Ignore"]),
        "nodeTaintsPolicy": st.sampled_from(["Honor", "Ignore"]),
        "matchLabelKeys": st.lists(st.sampled_from(["app", "tier"]), max_size=2, unique=True),
    }),
)
incoming_st = st.fixed_dictionaries({
    "labels": pod_labels_st,
    "constraints": st.lists(constraint_st, max_size=3),  # none: the system defaults (it has an owner)
    "namespace": st.sampled_from(["default", "other"]),
}, optional={
    "nodeSelector": st.dictionaries(st.sampled_from(["disk", ZONE]), st.sampled_from(["a", "b"]), max_size=1),
    "tolerate": st.booleans(),
})
# (add or remove, existing pod position, node position)
# add or remove an existing pod; "rack": give a node another rack (a label column changes in place)
change_st = st.tuples(st.sampled_from(["add", "remove", "rack"]), st.integers(0, 20), st.integers(0, len(NAMES) - 1))


class TablelessSnapshot:
    """The cache's nodes without a node table: the plugin takes its per-node path."""

    def __init__(self, cache: Cache) -> None:
        self.node_infos: list[NodeInfo] = cache.node_infos


def existing_pod(i: int, node: str, labels: dict[str, str], ns: str, deleting: bool) -> PodInfo:
    obj = make_pod(f"p{i}", namespace=ns, uid=f"uid-{i}", labels=labels, node=node,
                   deletion_timestamp="2024-01-01T00:00:00Z" if deleting else None)
    return PodInfo.from_pod(obj)


def build(nodes: list[dict[str, Any]], pods: list[tuple[int, dict[str, str], str, bool]]) -> Cache:
    cache = Cache()
    for i, shape in enumerate(nodes):
        node = make_node(NAMES[i], taints=[make_taint("t", "v", shape["taint"])] if shape["taint"] else None)
        node["metadata"]["labels"] = dict(shape["labels"])
        cache.add_node(node)
    for i, (at, labels, ns, deleting) in enumerate(pods):
        cache.add_pod(existing_pod(i, NAMES[at % len(nodes)], labels, ns, deleting))
    cache.update_snapshot()
    return cache


def incoming_pod(shape: dict[str, Any]) -> PodInfo:
    spec: dict[str, Any] = {}
    if shape["constraints"]:
        spec["topologySpreadConstraints"] = shape["constraints"]
    if "nodeSelector" in shape:
        spec["nodeSelector"] = shape["nodeSelector"]
    if shape.get("tolerate"):
        spec["tolerations"] = [{"operator": "Exists"}]
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs", "controller": True}
    obj = make_pod("x", namespace=shape["namespace"], uid="x", labels=shape["labels"], owner_references=[owner],
                   **spec)
    return PodInfo.from_pod(obj)


def plugins(cache: Cache, shape: dict[str, Any]) -> tuple[PodTopologySpread, PodTopologySpread]:
    rs = make_replicaset("rs", 1, make_pod("t"), namespace=shape["namespace"])
    rs["spec"]["selector"] = {"matchLabels": dict(shape["labels"])} if shape["labels"] else {
        "matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}
    objects = {"ReplicaSet": [rs]}
    vector = PodTopologySpread({}, FakeHandle(cache, objects=objects))
    reference = PodTopologySpread({}, FakeHandle(cache, objects=objects))
    reference.handle.snapshot = lambda: TablelessSnapshot(cache)  # type: ignore[method-assign,assignment,return-value]
    return vector, reference


def same_status(a: Status | None, b: Status | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.code, a.reasons, a.plugin) == (b.code, b.reasons, b.plugin)


def assert_filter_equal(plugin: PodTopologySpread, state: CycleState, pod: PodInfo, cache: Cache) -> None:
    nodes = cache.node_infos
    expected = [plugin.filter(state, pod, n) for n in nodes]
    mask = plugin.filter_vector(state, pod, cache)
    assert mask is not None
    assert mask.tolist() == [status is None for status in expected]
    failing = np.flatnonzero(~mask)
    got = plugin.failure_statuses(state, pod, cache, failing)
    want = [expected[j] for j in failing.tolist()]
    assert all(same_status(g, w) for g, w in zip(got, want, strict=True))


def pre_filter_view(state: CycleState) -> Any:
    s = state.read(PRE_FILTER_STATE_KEY)
    if not isinstance(s, PreFilterState):
        return None
    return ([list(m.items()) for m in s.counts], [(p.value, p.num) for p in s.paths], s.domains)


def pre_score_view(state: CycleState) -> Any:
    s = state.read(PRE_SCORE_STATE_KEY)
    if not isinstance(s, PreScoreState):
        return None
    return (s.ignored_nodes, [sorted(m.items()) for m in s.counts], s.weights)


def assert_equal_to_reference(vector: PodTopologySpread, reference: PodTopologySpread, pod: PodInfo,
                              cache: Cache) -> None:
    nodes = cache.node_infos
    state, ref_state = CycleState(), CycleState()
    result, status = vector.pre_filter(state, pod)
    ref_result, ref_status = reference.pre_filter(ref_state, pod)
    assert result == ref_result and same_status(status, ref_status)
    assert pre_filter_view(state) == pre_filter_view(ref_state)
    if status is None:
        assert_filter_equal(vector, state, pod, cache)
        # AddPod / RemovePod move the counts; the vector Filter follows them
        for node in nodes[:2]:
            for other in node.pods[:1]:
                vector.remove_pod(state, pod, other, node)
                assert_filter_equal(vector, state, pod, cache)
                vector.add_pod(state, pod, other, nodes[-1])
                assert_filter_equal(vector, state, pod, cache)
    for idx in (np.arange(len(nodes), dtype=np.int64), np.arange(0, len(nodes), 2, dtype=np.int64)):
        feasible = [nodes[i] for i in idx.tolist()]
        state, ref_state = CycleState(), CycleState()
        status = vector.pre_score(state, pod, feasible)
        assert same_status(status, reference.pre_score(ref_state, pod, feasible))
        assert pre_score_view(state) == pre_score_view(ref_state)
        if status is not None:
            continue
        scores = vector.score_vector(state, pod, cache, idx)
        assert scores.tolist() == [vector.score(state, pod, n) for n in feasible]
        normalized = scores.tolist()
        vector.normalize_score(state, pod, feasible, normalized)
        assert vector.normalize_vector(state, pod, scores).tolist() == normalized


@settings(max_examples=300, deadline=None, derandomize=True)
@given(nodes=st.lists(node_st, min_size=1, max_size=len(NAMES)), pods=st.lists(existing_st, max_size=20),
       shape=incoming_st, changes=st.lists(change_st, max_size=4))
def test_pod_topology_spread_vectors_equal_reference(nodes, pods, shape, changes) -> None:
    cache = build(nodes, pods)
    pod = incoming_pod(shape)
    vector, reference = plugins(cache, shape)
    assert_equal_to_reference(vector, reference, pod, cache)
    placed = {i: existing_pod(i, NAMES[at % len(nodes)], labels, ns, deleting)
              for i, (at, labels, ns, deleting) in enumerate(pods)}
    for what, i, at in changes:
        if what == "remove" and i in placed:
            cache.remove_pod(placed.pop(i))
        elif what == "add" and i not in placed:
            placed[i] = existing_pod(i, NAMES[at % len(nodes)], {"app": "web"}, "default", False)
            cache.add_pod(placed[i])
        elif what == "rack":
            node = cache.get(NAMES[at % len(nodes)]).node  # type: ignore[union-attr]
            assert node is not None
            labels = {**node["metadata"]["labels"], RACK: "abcd"[i % 4]}
            cache.update_node({**node, "metadata": {**node["metadata"], "labels": labels}})
        cache.update_snapshot()
        assert_equal_to_reference(vector, reference, pod, cache)
