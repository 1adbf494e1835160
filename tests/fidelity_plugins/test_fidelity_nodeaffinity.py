"""Node selector parsing/matching and NodeAffinity pinned against upstream v1.28
(``component-helpers/scheduling/corev1/nodeaffinity``, ``apimachinery labels.NewRequirement``)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.selectors import node_selector_term_matches
from kubesched.scheduler.framework.interface import Code, CycleState
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.plugins.nodeaffinity import REASON_POD, NodeAffinity
from kubesched.testkit.builders import make_node
from kubesched.testkit.framework import FakeHandle, node_info

from ._fixtures import node_obj, pod_obj


def req(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def node(name: str = "n1", **labels: str) -> dict[str, Any]:
    """A node with exactly ``labels`` and no allocatable resources."""
    return make_node(name, cpu=None, memory=None, pods=None, labels=labels, hostname=False, capacity=None)


@pytest.mark.parametrize(
    ("term", "n", "expected"),
    [
        # values must be valid label values: "-1" starts with '-', so the requirement does not parse
        ({"matchExpressions": [req("cores", "Lt", "-1")]}, node(cores="-5"), False),
        ({"matchExpressions": [req("cores", "Gt", "+1")]}, node(cores="5"), False),
        ({"matchExpressions": [req("cores", "Gt", "1")]}, node(cores="5"), True),
        # Gt/Lt bounds and node values are int64
        ({"matchExpressions": [req("cores", "Lt", "99999999999999999999")]}, node(cores="5"), False),
        ({"matchExpressions": [req("cores", "Gt", "1")]}, node(cores="99999999999999999999"), False),
        # an unparsable NotIn value makes the whole term fail rather than match everything
        ({"matchExpressions": [req("zone", "NotIn", "a b")]}, node(zone="x"), False),
        ({"matchExpressions": [req("zone", "In", "x" * 64)]}, node(zone="x" * 64), False),
        # matchFields In/NotIn need exactly one value
        ({"matchFields": [req("metadata.name", "In", "n1", "n2")]}, node("n1"), False),
        ({"matchFields": [req("metadata.name", "NotIn", "n2")]}, node("n1"), True),
        # the node's field set holds only metadata.name: any other key reads as ""
        ({"matchFields": [req("metadata.uid", "NotIn", "x")]}, node("n1"), True),
        ({"matchFields": [req("metadata.uid", "In", "x")]}, node("n1"), False),
    ],
)
def test_node_selector_term_parse_and_match(term: dict, n: dict, expected: bool) -> None:
    """``newNodeSelectorTerm`` + ``nodeSelectorTerm.match``: a term with a parse error never matches
    (``labels.NewRequirement`` validates values as label values and Gt/Lt values with
    ``strconv.ParseInt(v, 10, 64)``; ``nodeSelectorRequirementsAsFieldSelector`` wants one value)."""
    assert node_selector_term_matches(term, n) is expected


def preferred(*terms: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": w, "preference": p} for w, p in terms]}}}


def test_unparsable_preferred_term_fails_prescore() -> None:
    """``NodeAffinity.PreScore`` → ``getPodPreferredNodeAffinity`` → ``NewPreferredSchedulingTerms``
    returns the parse error, so PreScore returns an Error status (the cycle fails)."""
    plugin = NodeAffinity({}, FakeHandle())
    nodes = [node_info(node_obj("a")), node_info(node_obj("b"))]
    bad = PodInfo.from_pod(pod_obj(spec=preferred((5, {"matchExpressions": [req("cores", "Gt", "-1")]}))))
    status = plugin.pre_score(CycleState(), bad, nodes)
    assert status is not None and status.code == Code.ERROR
    # a zero weight or empty preference is skipped before parsing
    ignored = PodInfo.from_pod(pod_obj(spec=preferred((0, {"matchExpressions": [req("cores", "Gt", "-1")]}),
                                                     (3, {}))))
    assert plugin.pre_score(CycleState(), ignored, nodes) is None
    good = PodInfo.from_pod(pod_obj(spec=preferred((5, {"matchExpressions": [req("cores", "Gt", "1")]}))))
    assert plugin.pre_score(CycleState(), good, nodes) is None


def test_unparsable_added_affinity_is_a_config_error() -> None:
    """``nodeaffinity.New``: ``NewNodeSelector`` / ``NewPreferredSchedulingTerms`` errors fail plugin
    construction."""
    with pytest.raises(ValueError):
        NodeAffinity({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [req("a", "Lt", "x")]}]}}}, FakeHandle())
    with pytest.raises(ValueError):
        NodeAffinity({"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchFields": [req("metadata.name", "In", "a", "b")]}}]}},
            FakeHandle())


def test_required_term_with_parse_error_is_skipped_not_fatal() -> None:
    """``LazyErrorNodeSelector.Match``: terms with parse errors are skipped (errors ignored by the
    Filter), other terms still match."""
    plugin = NodeAffinity({}, FakeHandle())
    spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [req("zone", "NotIn", "bad value")]},
        {"matchExpressions": [req("zone", "In", "a")]},
    ]}}}}
    p = PodInfo.from_pod(pod_obj(spec=spec))
    state = CycleState()
    plugin.pre_filter(state, p)
    assert plugin.filter(state, p, node_info(node_obj("a", labels={"zone": "a"}))) is None
    status = plugin.filter(state, p, node_info(node_obj("b", labels={"zone": "b"})))
    assert status is not None and status.reasons == (REASON_POD,)
