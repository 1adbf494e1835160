"""Differential tests: NodeAffinity's and NodePorts' vector forms equal their per-node reference on
generated nodes and pods, also after the nodes' labels change and nodes come and go (the node
table's label columns stay in step with the nodes)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler.cache import Cache
from kubesched.scheduler.framework.interface import CycleState
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.plugins.nodeaffinity import NodeAffinity
from kubesched.scheduler.plugins.nodeports import NodePorts
from kubesched.testkit.builders import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"  # also orders the cache's nodes: changing it rebuilds the table
KEYS = [ZONE, "a", "b"]
# integer-looking and not, out of int64 range, signs and leading zeros, the empty value, invalid values
VALUES = ["1", "2", "10", "-3", "+4", "01", "x", "", "9223372036854775807", "9223372036854775808", "1.5", "a b"]
NAMES = [f"n{i}" for i in range(6)]
OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]

labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)

# well-formed requirements (mostly parse) and anything-goes ones (mostly do not)
good_expr_st = st.one_of(
    st.builds(lambda k, op, vs: {"key": k, "operator": op, "values": vs}, st.sampled_from(KEYS + ["c"]),
              st.sampled_from(["In", "NotIn"]), st.lists(st.sampled_from(VALUES[:8]), min_size=1, max_size=3)),
    st.builds(lambda k, op: {"key": k, "operator": op}, st.sampled_from(KEYS + ["c"]),
              st.sampled_from(["Exists", "DoesNotExist"])),
    st.builds(lambda k, op, v: {"key": k, "operator": op, "values": [v]}, st.sampled_from(KEYS + ["c"]),
              st.sampled_from(["Gt", "Lt"]), st.sampled_from(["1", "2", "-3", "+4", "01", "10", "0"])),
)
any_expr_st = st.fixed_dictionaries(
    {"key": st.sampled_from(KEYS + ["", "c"]), "operator": st.sampled_from(OPERATORS + ["Bogus"])},
    optional={"values": st.lists(st.sampled_from(VALUES), max_size=2)},
)
expr_st = st.one_of(good_expr_st, good_expr_st, any_expr_st)
field_st = st.fixed_dictionaries({
    "key": st.sampled_from(["metadata.name", "metadata.name", "metadata.namespace"]),
    "operator": st.sampled_from(["In", "NotIn", "In", "NotIn", "Exists"]),
    "values": st.one_of(st.lists(st.sampled_from(NAMES + ["", "other"]), min_size=1, max_size=1),
                        st.lists(st.sampled_from(NAMES), max_size=2)),
})
term_st = st.fixed_dictionaries({}, optional={
    "matchExpressions": st.lists(expr_st, max_size=3),
    "matchFields": st.lists(field_st, max_size=2),
})
selector_st = st.builds(lambda terms: {"nodeSelectorTerms": terms}, st.lists(term_st, max_size=3))
preferred_st = st.lists(
    st.fixed_dictionaries({"weight": st.integers(0, 100), "preference": term_st}), max_size=3
)
pod_st = st.fixed_dictionaries({}, optional={
    "nodeSelector": st.dictionaries(st.sampled_from(KEYS + ["c"]), st.sampled_from(VALUES[:8]), max_size=2),
    "required": selector_st,
    "preferred": preferred_st,
    "ports": st.lists(st.tuples(st.sampled_from([80, 443, 8080]), st.sampled_from(["", "10.0.0.1"])), max_size=2),
})
added_st = st.one_of(st.none(), st.fixed_dictionaries({}, optional={
    "requiredDuringSchedulingIgnoredDuringExecution": selector_st,
    "preferredDuringSchedulingIgnoredDuringExecution": preferred_st,
}))
node_st = st.tuples(labels_st, st.lists(st.sampled_from([80, 443, 9090]), max_size=2))
# (what, node position, new labels): update a node's labels, remove a node, or add one back
change_st = st.tuples(st.sampled_from(["relabel", "relabel", "remove", "add"]), st.integers(0, 5), labels_st)


def node_obj(name: str, labels: dict[str, str]) -> dict[str, Any]:
    node = make_node(name)
    node["metadata"]["labels"] = dict(labels)
    return node


def pod_obj(name: str, shape: dict[str, Any], node: str | None = None) -> dict[str, Any]:
    pod = make_pod(name, node=node)
    spec = pod["spec"]
    if "ports" in shape:
        spec["containers"][0]["ports"] = [
            {"containerPort": port, "hostPort": port, **({"hostIP": ip} if ip else {})} for port, ip in shape["ports"]
        ]
    if "nodeSelector" in shape:
        spec["nodeSelector"] = shape["nodeSelector"]
    affinity: dict[str, Any] = {}
    if "required" in shape:
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = shape["required"]
    if "preferred" in shape:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = shape["preferred"]
    if affinity:
        spec["affinity"] = {"nodeAffinity": affinity}
    return pod


def build(nodes: list[tuple[dict[str, str], list[int]]]) -> Cache:
    cache = Cache()
    for i, (labels, ports) in enumerate(nodes):
        cache.add_node(node_obj(NAMES[i], labels))
        if ports:
            bound = pod_obj(f"bound-{i}", {"ports": [(p, "") for p in ports]}, node=NAMES[i])
            bound["metadata"]["uid"] = f"uid-{i}"
            cache.add_pod(PodInfo.from_pod(bound))
    cache.update_snapshot()
    return cache


def node_affinity(added: dict[str, Any] | None) -> NodeAffinity:
    handle: Any = object()
    if added is not None:
        try:
            return NodeAffinity({"addedAffinity": added}, handle)
        except ValueError:  # addedAffinity terms that do not parse are a configuration error
            pass
    return NodeAffinity({}, handle)


def assert_affinity_vectors_equal_reference(plugin: NodeAffinity, pod: PodInfo, cache: Cache) -> None:
    state = CycleState()
    nodes = cache.node_infos
    expected = [plugin.filter(state, pod, n) for n in nodes]
    mask = plugin.filter_vector(state, pod, cache)
    assert mask is not None  # string labels and selectors: never left to the per-node path
    assert mask.tolist() == [status is None for status in expected]
    failing = np.flatnonzero(~mask)
    got = plugin.failure_statuses(state, pod, cache, failing)
    want = [expected[j] for j in failing.tolist()]
    assert [(s.code, s.reasons) for s in got] == [(s.code, s.reasons) for s in want if s is not None]
    for idx in (np.arange(len(nodes), dtype=np.int64), np.arange(0, len(nodes), 2, dtype=np.int64)):
        scores = plugin.score_vector(state, pod, cache, idx)
        assert scores.tolist() == [plugin.score(state, pod, nodes[i]) for i in idx.tolist()]
        normalized = scores.tolist()
        plugin.normalize_score(state, pod, [nodes[i] for i in idx.tolist()], normalized)
        assert plugin.normalize_vector(state, pod, scores).tolist() == normalized


def assert_ports_vectors_equal_reference(pod: PodInfo, cache: Cache) -> None:
    plugin = NodePorts({}, object())  # type: ignore[arg-type]
    state = CycleState()
    expected = [plugin.filter(state, pod, n) for n in cache.node_infos]
    mask = plugin.filter_vector(state, pod, cache)
    assert mask is not None
    assert mask.tolist() == [status is None for status in expected]
    failing = np.flatnonzero(~mask)
    got = plugin.failure_statuses(state, pod, cache, failing)
    assert [(s.code, s.reasons) for s in got] == [
        (s.code, s.reasons) for j in failing.tolist() if (s := expected[j]) is not None
    ]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(nodes=st.lists(node_st, min_size=1, max_size=6), shape=pod_st, added=added_st,
       changes=st.lists(change_st, max_size=4))
def test_node_affinity_and_ports_vectors_equal_reference(nodes, shape, added, changes) -> None:
    cache = build(nodes)
    plugin = node_affinity(added)
    pod = PodInfo.from_pod(pod_obj("x", shape))
    assert_affinity_vectors_equal_reference(plugin, pod, cache)
    assert_ports_vectors_equal_reference(pod, cache)
    for what, position, labels in changes:
        name = NAMES[position]
        if what == "relabel" and name in cache.nodes:
            cache.update_node(node_obj(name, labels))
        elif what == "remove" and name in cache.nodes and len(cache.nodes) > 1:
            cache.remove_node(node_obj(name, {}))
        elif what == "add" and name not in cache.nodes:
            cache.add_node(node_obj(name, labels))
        cache.update_snapshot()
        assert_affinity_vectors_equal_reference(plugin, pod, cache)
        assert_ports_vectors_equal_reference(pod, cache)


# one key, few values: integer-looking or not, out of int64 range, empty, not a valid label value
FEW_VALUES = ["0", "1", "2", "01", "-1", "x", "", "9223372036854775808", "a b"]
ONE_KEY_EXPRS = (
    [{"key": "a", "operator": op} for op in OPERATORS]
    + [{"key": "a", "operator": op, "values": [v]} for op in OPERATORS for v in FEW_VALUES]
    + [{"key": "a", "operator": op, "values": ["1", v]} for op in OPERATORS for v in FEW_VALUES]
)
NAME_FIELDS = [
    {"key": key, "operator": op, **({} if values is None else {"values": values})}
    for key in ("metadata.name", "metadata.namespace")
    for op in ("In", "NotIn", "Exists")
    for values in (None, [], [""], ["n1"], ["other"], ["n1", "n2"])
]


def test_every_operator_and_value_alone_equals_reference() -> None:
    """Each requirement alone, required and preferred, on nodes holding every value once and one
    node without the key (combined terms in the generated tests rarely reach every case)."""
    cache = build([({"a": v}, []) for v in FEW_VALUES[:5]] + [({}, [])])
    cache_rest = build([({"a": v}, []) for v in FEW_VALUES[5:]])
    plugin = node_affinity(None)
    requirements = [{"matchExpressions": [e]} for e in ONE_KEY_EXPRS] + [{"matchFields": [f]} for f in NAME_FIELDS]
    for requirement in requirements:
        shape = {"required": {"nodeSelectorTerms": [requirement]}, "preferred": [{"weight": 7, "preference": requirement}]}
        for nodes in (cache, cache_rest):
            assert_affinity_vectors_equal_reference(plugin, PodInfo.from_pod(pod_obj("x", shape)), nodes)
    for value in FEW_VALUES:
        selector = PodInfo.from_pod(pod_obj("x", {"nodeSelector": {"a": value}}))
        for nodes in (cache, cache_rest):
            assert_affinity_vectors_equal_reference(plugin, selector, nodes)


def test_relabel_without_rebuild_updates_the_columns() -> None:
    # the zone stays, so the cache keeps its node order and updates the table in place
    cache = build([({ZONE: "z1", "a": "1"}, []), ({ZONE: "z1", "a": "2"}, [])])
    plugin = node_affinity(None)
    pod = PodInfo.from_pod(pod_obj("x", {"nodeSelector": {"a": "3"}}))
    assert plugin.filter_vector(CycleState(), pod, cache).tolist() == [False, False]  # type: ignore[union-attr]
    table_before = cache.table.alloc
    cache.update_node(node_obj("n1", {ZONE: "z1", "a": "3"}))
    cache.update_snapshot()
    assert cache.table.alloc is table_before  # no rebuild happened
    assert plugin.filter_vector(CycleState(), pod, cache).tolist() == [False, True]  # type: ignore[union-attr]
    assert_affinity_vectors_equal_reference(plugin, pod, cache)


def test_values_the_columns_cannot_hold_are_left_to_the_per_node_path() -> None:
    cache = build([({"a": "1"}, []), ({"a": "2"}, [])])
    cache.update_node(node_obj("n1", {"a": 2}))  # type: ignore[dict-item]  # not a string
    cache.update_snapshot()
    plugin = node_affinity(None)
    state = CycleState()
    pod = PodInfo.from_pod(pod_obj("x", {"nodeSelector": {"a": "1"}}))
    assert plugin.filter_vector(state, pod, cache) is None
    other_key = PodInfo.from_pod(pod_obj("y", {"nodeSelector": {"b": "1"}}))
    assert plugin.filter_vector(state, other_key, cache) is not None
    odd_selector = PodInfo.from_pod(pod_obj("z", {"nodeSelector": {"b": 1}}))
    assert plugin.filter_vector(state, odd_selector, cache) is None
    preferring = PodInfo.from_pod(pod_obj("p", {"preferred": [
        {"weight": 5, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}},
    ]}))
    idx = np.arange(2, dtype=np.int64)
    assert plugin.score_vector(state, preferring, cache, idx).tolist() == [5, 5]
    # once the value is a string again, the column is built anew
    cache.update_node(node_obj("n1", {"a": "2"}))
    cache.update_snapshot()
    assert plugin.filter_vector(state, pod, cache).tolist() == [True, False]  # type: ignore[union-attr]


def test_match_fields_skip_a_node_without_a_name() -> None:
    cache = Cache()
    for name in ("", "n1"):
        cache.add_node(node_obj(name, {}))
    cache.update_snapshot()
    plugin = node_affinity(None)
    for operator in ("In", "NotIn"):
        pod = PodInfo.from_pod(pod_obj("x", {"required": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": operator, "values": ["n1"]}]},
        ]}}))
        assert_affinity_vectors_equal_reference(plugin, pod, cache)
