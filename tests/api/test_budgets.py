"""The PodDisruptionBudget index against the plain reading of every budget: a pod is selected by the
budgets of its namespace whose (valid, non-empty) selector matches its labels, whatever the index
files them under, through updates, status changes and deletions."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.budgets import BudgetIndex
from kubesched.api.selectors import LabelSelector
from kubesched.testkit.builders import make_pdb

KEYS = ("app", "tier", "team")
VALUES = ("a", "b", "c")
NAMESPACES = ("default", "prod")

requirement_st = st.one_of(
    st.fixed_dictionaries({"key": st.sampled_from(KEYS), "operator": st.sampled_from(["In", "NotIn"]),
                           "values": st.lists(st.sampled_from(VALUES), min_size=1, max_size=2, unique=True)}),
    st.fixed_dictionaries({"key": st.sampled_from(KEYS), "operator": st.sampled_from(["Exists", "DoesNotExist"])}),
    st.just({"key": "app", "operator": "Bogus"}),  # invalid: selects nothing
)
selector_st = st.one_of(
    st.none(),
    st.just({}),
    st.fixed_dictionaries({}, optional={
        "matchLabels": st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2),
        "matchExpressions": st.lists(requirement_st, max_size=2)}),
)
labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)


def pdb(name: str, namespace: str, selector: Any, allowed: int = 1) -> dict[str, Any]:
    return make_pdb(name, selector, namespace=namespace, max_unavailable=1, disruptions_allowed=allowed)


def plainly_selecting(pdbs: dict[str, dict[str, Any]], namespace: str, labels: dict[str, str]) -> list[str]:
    out = []
    for key, obj in pdbs.items():
        if obj["metadata"]["namespace"] != namespace or not labels:
            continue
        try:
            selector = LabelSelector.from_dict(obj["spec"].get("selector"))
        except ValueError:
            continue
        if not selector.is_empty and selector.matches(labels):
            out.append(key)
    return sorted(out)


@settings(max_examples=300, deadline=None)
@given(budgets=st.lists(st.tuples(st.sampled_from(NAMESPACES), selector_st), max_size=8),
       changes=st.lists(st.tuples(st.integers(0, 7), st.one_of(st.none(), selector_st)), max_size=6),
       pods=st.lists(st.tuples(st.sampled_from(NAMESPACES), labels_st), min_size=1, max_size=6))
def test_the_index_selects_as_every_budget_read_plainly(budgets: list, changes: list, pods: list) -> None:
    objects = {f"{ns}/b{i}": pdb(f"b{i}", ns, selector) for i, (ns, selector) in enumerate(budgets)}
    index = BudgetIndex(objects.values())
    for (namespace, labels) in pods:
        assert sorted(index.selecting(namespace, labels)) == plainly_selecting(objects, namespace, labels)
    for i, selector in changes:  # a budget's selector changes, or it is deleted (None)
        key = next((k for k in objects if k.endswith(f"/b{i}")), None)
        if key is None:
            continue
        if selector is None:
            del objects[key]
            index.update(key, None)
        else:
            objects[key] = pdb(f"b{i}", key.split("/")[0], selector)
            index.update(key, objects[key])
        for (namespace, labels) in pods:
            assert sorted(index.selecting(namespace, labels)) == plainly_selecting(objects, namespace, labels)


def test_a_status_update_keeps_the_selection_and_reads_the_new_budget() -> None:
    """disruptionsAllowed changes all the time (the disruption controller); the filing and the
    answers kept on pods stay valid, the new value is read."""
    index = BudgetIndex([pdb("web", "default", {"matchLabels": {"app": "web"}}, allowed=2)])
    selection = index.selection
    index.update("default/web", pdb("web", "default", {"matchLabels": {"app": "web"}}, allowed=0))
    assert index.selection is selection
    budget = index.get("default/web")
    assert budget is not None and budget.allowed == 0
    index.update("default/web", pdb("web", "default", {"matchLabels": {"app": "api"}}, allowed=0))
    assert index.selection is not selection
    assert index.selecting("default", {"app": "web"}) == () and index.selecting("default", {"app": "api"})
