"""The node table's pod groups: per group, the nodes holding its pods and how many each, kept in
step as nodes change (arrays patched in place of a rebuild) — held against a count from the pods."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.selectors import LabelSelector
from kubesched.scheduler import podgroups
from kubesched.scheduler.framework.types import PodInfo
from kubesched.testkit.builders import make_pod

NODES = 7
LABELS = ({"app": "a"}, {"app": "b"}, {"app": "a", "tier": "web"}, {})
PODS = [PodInfo.from_pod(make_pod(f"p{i}", labels=dict(labels), namespace=ns))
        for i, (labels, ns) in enumerate((lb, ns) for ns in ("default", "other") for lb in LABELS)]

#: per step: a node, the pods it holds now (indexes into PODS), whether to read the groups then
steps = st.lists(st.tuples(st.integers(0, NODES - 1), st.lists(st.integers(0, len(PODS) - 1), max_size=5),
                           st.booleans()), max_size=80)


def expected_groups(pods_on: list[list[PodInfo]]) -> dict[tuple[str, tuple[Any, ...]], dict[int, int]]:
    out: dict[tuple[str, tuple[Any, ...]], dict[int, int]] = {}
    for node, pods in enumerate(pods_on):
        for pod in pods:
            per_node = out.setdefault((pod.namespace, tuple(sorted(pod.labels.items()))), {})
            per_node[node] = per_node.get(node, 0) + 1
    return out


def check(groups: podgroups.PodGroups, pods_on: list[list[PodInfo]], handed_out: list[Any]) -> None:
    for arrays, copies in handed_out:  # arrays handed out earlier never change under their holder
        assert all((a == c).all() for a, c in zip(arrays, copies))
    seen = {}
    for namespace, labels, where, counts in groups.label_groups():
        handed_out.append(((where, counts), (where.copy(), counts.copy())))
        assert where.tolist() == sorted(where.tolist())
        seen[(namespace, tuple(sorted(labels.items())))] = dict(zip(where.tolist(), counts.tolist()))
    assert seen == expected_groups(pods_on)
    selector = LabelSelector.from_labels({"app": "a"})
    per_node = groups.count("default", selector).tolist()
    assert per_node == [sum(1 for p in pods if p.namespace == "default" and p.labels.get("app") == "a")
                        for pods in pods_on]


@pytest.mark.parametrize("limit", [1, 3, 64])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=steps)
def test_group_arrays_follow_every_node_change(ops: list[tuple[int, list[int], bool]], limit: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(podgroups, "_PATCH_LIMIT", limit)  # the same for every input
    groups = podgroups.PodGroups([SimpleNamespace(pods=[]) for _ in range(NODES)])  # type: ignore[misc]
    pods_on: list[list[PodInfo]] = [[] for _ in range(NODES)]
    handed_out: list[Any] = []
    for node, chosen, look in ops:
        pods_on[node] = [PODS[i] for i in chosen]
        groups.set_node(node, pods_on[node])
        if look:
            check(groups, pods_on, handed_out)
    check(groups, pods_on, handed_out)
