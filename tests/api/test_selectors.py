from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.selectors import (
    LabelSelector,
    node_selector_matches,
    node_selector_term_matches,
    pod_matches_node_selector_and_affinity,
    preferred_node_affinity_score,
    required_node_names,
)
from kubesched.testkit.builders import make_node


def node(name: str = "n1", **labels: str) -> dict[str, Any]:
    """A node with exactly ``labels`` and no allocatable resources."""
    return make_node(name, cpu=None, memory=None, pods=None, labels=labels, hostname=False, capacity=None)


def pod(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def req(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


# ---------------------------------------------------------------- label selectors
@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        (None, {"a": "1"}, False),
        (None, {}, False),
        ({}, {}, True),
        ({}, {"a": "1"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        ({"matchLabels": {"a": "1"}}, {}, False),
        ({"matchExpressions": [req("a", "In", "1", "2")]}, {"a": "2"}, True),
        ({"matchExpressions": [req("a", "In", "1")]}, {}, False),
        ({"matchExpressions": [req("a", "NotIn", "1")]}, {}, True),
        ({"matchExpressions": [req("a", "NotIn", "1")]}, {"a": "1"}, False),
        ({"matchExpressions": [req("a", "NotIn", "1")]}, {"a": "3"}, True),
        ({"matchExpressions": [req("a", "Exists")]}, {"a": ""}, True),
        ({"matchExpressions": [req("a", "Exists")]}, {"b": "1"}, False),
        ({"matchExpressions": [req("a", "DoesNotExist")]}, {"b": "1"}, True),
        ({"matchExpressions": [req("a", "DoesNotExist")]}, {"a": "1"}, False),
        ({"matchLabels": {"a": "1"}, "matchExpressions": [req("b", "Exists")]}, {"a": "1"}, False),
        ({"matchLabels": {"a": "1"}, "matchExpressions": [req("b", "Exists")]}, {"a": "1", "b": "x"}, True),
        ({"matchLabels": None, "matchExpressions": None}, {"a": "1"}, True),
    ],
)
def test_label_selector_matching(selector: dict | None, labels: dict[str, str], expected: bool) -> None:
    assert LabelSelector.from_dict(selector).matches(labels) is expected


@pytest.mark.parametrize(
    ("selector", "empty"),
    [(None, True), ({}, True), ({"matchLabels": {}}, True), ({"matchLabels": {"a": "1"}}, False),
     ({"matchExpressions": [req("a", "Exists")]}, False)],
)
def test_label_selector_is_empty_for_nil_and_empty(selector: dict | None, empty: bool) -> None:
    assert LabelSelector.from_dict(selector).is_empty is empty


@pytest.mark.parametrize(
    "selector",
    [
        {"matchExpressions": [req("a", "Gt", "1")]},
        {"matchExpressions": [req("a", "in", "1")]},
        {"matchExpressions": [req("a", "In")]},
        {"matchExpressions": [req("a", "NotIn")]},
        {"matchExpressions": [req("a", "Exists", "x")]},
        {"matchExpressions": [req("a", "DoesNotExist", "x")]},
        {"matchExpressions": [{"operator": "Exists"}]},
        {"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]},
        {"matchLabels": {"a": 1}},
        {"matchLabels": ["a"]},
        {"matchExpressions": {"key": "a"}},
        ["a"],
    ],
)
def test_label_selector_rejects_invalid_requirements(selector: Any) -> None:
    with pytest.raises(ValueError):
        LabelSelector.from_dict(selector)


def test_label_selector_is_hashable_and_comparable() -> None:
    a = LabelSelector.from_dict({"matchLabels": {"x": "1", "y": "2"}})
    b = LabelSelector.from_dict({"matchLabels": {"y": "2", "x": "1"}})
    assert a == b and hash(a) == hash(b)
    assert LabelSelector.from_labels({"x": "1", "y": "2"}) == a


# ---------------------------------------------------------------- node selector terms
@pytest.mark.parametrize(
    ("term", "n", "expected"),
    [
        ({}, node(), False),
        ({"matchExpressions": [], "matchFields": []}, node(), False),
        ({"matchExpressions": [req("zone", "In", "a", "b")]}, node(zone="b"), True),
        ({"matchExpressions": [req("zone", "In", "a")]}, node(zone="b"), False),
        ({"matchExpressions": [req("zone", "NotIn", "a")]}, node(), True),
        ({"matchExpressions": [req("zone", "NotIn", "a")]}, node(zone="a"), False),
        ({"matchExpressions": [req("zone", "Exists")]}, node(zone="a"), True),
        ({"matchExpressions": [req("zone", "DoesNotExist")]}, node(zone="a"), False),
        ({"matchExpressions": [req("cores", "Gt", "4")]}, node(cores="8"), True),
        ({"matchExpressions": [req("cores", "Gt", "4")]}, node(cores="4"), False),
        ({"matchExpressions": [req("cores", "Lt", "4")]}, node(cores="-2"), True),
        ({"matchExpressions": [req("cores", "Lt", "4")]}, node(cores="4"), False),
        ({"matchExpressions": [req("cores", "Gt", "4")]}, node(cores="eight"), False),
        ({"matchExpressions": [req("cores", "Gt", "4")]}, node(), False),
        ({"matchExpressions": [req("cores", "Gt", "four")]}, node(cores="8"), False),
        ({"matchExpressions": [req("cores", "Gt", "1", "2")]}, node(cores="8"), False),
        ({"matchExpressions": [req("zone", "In", "a"), req("disk", "Exists")]}, node(zone="a"), False),
        ({"matchExpressions": [req("zone", "In", "a"), req("disk", "Exists")]}, node(zone="a", disk="ssd"), True),
        ({"matchFields": [req("metadata.name", "In", "n1")]}, node("n1"), True),
        ({"matchFields": [req("metadata.name", "In", "n1")]}, node("n2"), False),
        ({"matchFields": [req("metadata.name", "NotIn", "n1")]}, node("n2"), True),
        ({"matchFields": [req("metadata.uid", "In", "n1")]}, node("n1"), False),
        ({"matchFields": [req("metadata.name", "In", "n1")],
          "matchExpressions": [req("zone", "In", "a")]}, node("n1", zone="b"), False),
        ({"matchExpressions": [req("zone", "Bogus", "a")]}, node(zone="a"), False),
    ],
)
def test_node_selector_term_matching(term: dict, n: dict, expected: bool) -> None:
    assert node_selector_term_matches(term, n) is expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (None, True),
        ({"nodeSelectorTerms": []}, False),
        ({"nodeSelectorTerms": [{"matchExpressions": [req("zone", "In", "x")]},
                                {"matchExpressions": [req("zone", "In", "a")]}]}, True),
        ({"nodeSelectorTerms": [{"matchExpressions": [req("zone", "In", "x")]}]}, False),
        ({"nodeSelectorTerms": [{}]}, False),
    ],
)
def test_node_selector_terms_are_ored(selector: dict | None, expected: bool) -> None:
    assert node_selector_matches(selector, node(zone="a")) is expected


def required(*terms: dict) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, True),
        ({"nodeSelector": {"zone": "a"}}, True),
        ({"nodeSelector": {"zone": "b"}}, False),
        ({"nodeSelector": {"zone": "a", "disk": "ssd"}}, False),
        ({"affinity": required({"matchExpressions": [req("zone", "In", "a")]})}, True),
        ({"affinity": required({"matchExpressions": [req("zone", "In", "b")]})}, False),
        ({"nodeSelector": {"zone": "b"}, "affinity": required({"matchExpressions": [req("zone", "In", "a")]})}, False),
        ({"nodeSelector": {"zone": "a"}, "affinity": required({"matchExpressions": [req("zone", "In", "a")]})}, True),
        ({"affinity": {"nodeAffinity": {}}}, True),
        ({"affinity": {"podAffinity": {}}}, True),
    ],
)
def test_pod_node_selector_and_required_affinity_are_anded(spec: dict, expected: bool) -> None:
    assert pod_matches_node_selector_and_affinity(pod(spec), node(zone="a")) is expected


def preferred(*items: tuple[int, dict]) -> dict[str, Any]:
    return {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": w, "preference": p} for w, p in items]}}}


@pytest.mark.parametrize(
    ("spec", "score"),
    [
        ({}, 0),
        (preferred((5, {"matchExpressions": [req("zone", "In", "a")]})), 5),
        (preferred((5, {"matchExpressions": [req("zone", "In", "b")]})), 0),
        (preferred((5, {"matchExpressions": [req("zone", "In", "a")]}),
                   (10, {"matchExpressions": [req("disk", "Exists")]}),
                   (20, {"matchExpressions": [req("gpu", "Exists")]})), 15),
        (preferred((7, {})), 0),
    ],
)
def test_preferred_node_affinity_score_sums_matching_weights(spec: dict, score: int) -> None:
    assert preferred_node_affinity_score(pod(spec), node(zone="a", disk="ssd")) == score


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        ({}, None),
        ({"nodeSelector": {"a": "b"}}, None),
        ({"affinity": required({"matchFields": [req("metadata.name", "In", "n1")]})}, {"n1"}),
        ({"affinity": required({"matchFields": [req("metadata.name", "In", "n1")]},
                               {"matchFields": [req("metadata.name", "In", "n2")]})}, {"n1", "n2"}),
        ({"affinity": required({"matchFields": [req("metadata.name", "In", "n1")]},
                               {"matchExpressions": [req("zone", "In", "a")]})}, None),
        ({"affinity": required({"matchFields": [req("metadata.name", "NotIn", "n1")]})}, None),
        ({"affinity": required({"matchFields": [req("metadata.name", "In", "n1"),
                                                req("metadata.name", "In", "n2")]})}, set()),
        ({"affinity": required({"matchFields": [req("metadata.name", "In", "n1")],
                                "matchExpressions": [req("zone", "In", "a")]})}, {"n1"}),
    ],
)
def test_required_node_names_from_metadata_name_fields(spec: dict, names: set[str] | None) -> None:
    assert required_node_names(pod(spec)) == names
