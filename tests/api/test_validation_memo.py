"""Checks that remember the values that passed still report every failing value, at its own path."""

from __future__ import annotations

from typing import Any

from kubesched.api.validation import validate_object


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    containers = spec.pop("containers", [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": containers, **spec}}


def _errors(obj: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    return list(validate_object(obj, prefix))


def test_a_value_that_passed_once_passes_again_and_one_that_failed_fails_at_each_path() -> None:
    good = [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
    bad = [{"key": "k", "operator": "Exists", "value": "v"}]
    assert _errors(_pod("a", tolerations=good)) == []
    assert _errors(_pod("b", tolerations=good)) == []
    first = _errors(_pod("c", tolerations=bad), "items[3]")
    second = _errors(_pod("d", tolerations=bad), "items[4]")
    assert first == [("items[3].spec.tolerations[0].value", "must be empty when `operator` is 'Exists'")]
    assert second == [("items[4].spec.tolerations[0].value", "must be empty when `operator` is 'Exists'")]


def test_values_equal_in_python_but_not_in_type_are_told_apart() -> None:
    seconds = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    assert _errors(_pod("a", tolerations=[seconds])) == []
    as_float = _errors(_pod("b", tolerations=[{**seconds, "tolerationSeconds": 30.0}]))
    as_bool = _errors(_pod("c", tolerations=[{**seconds, "tolerationSeconds": True}]))
    assert as_float and as_bool  # 30.0 == 30 == True in Python; not an integer in Kubernetes


def test_duplicate_container_names_are_found_when_each_container_passed_before() -> None:
    container = {"name": "app", "image": "i"}
    assert _errors(_pod("a", containers=[container])) == []
    errors = _errors(_pod("b", containers=[dict(container), dict(container)]))
    assert errors == [("spec.containers[1].name", 'duplicate container name "app"')]
    # a container that failed once fails again, with its duplicate reported in the same order
    bad = {"name": "Bad_Name", "image": "i"}
    one = _errors(_pod("c", containers=[bad, dict(bad)]))
    two = _errors(_pod("d", containers=[bad, dict(bad)]))
    assert one == two and [p for p, _ in one].count("spec.containers[1].name") == 2


def test_values_are_told_apart_by_content_and_type_whatever_the_reader_gave() -> None:
    """The memo's key (:func:`value_key`): nan and null, 1 and True, a text and a number, a list and
    a tuple differ; values marshal cannot write (a YAML timestamp) are keyed by their repr."""
    import datetime
    import math

    from kubesched.api.checks import value_key

    values = [None, math.nan, 1, 1.0, True, "1", [1], (1,), {"a": 1}, {"a": 1.0}, {"a": "1"},
              datetime.datetime(2026, 1, 1), "2026-01-01 00:00:00"]
    keys = [value_key(v) for v in values]
    assert len(set(keys)) == len(values)
    assert value_key({"a": [1, "x"]}) == value_key({"a": [1, "x"]})  # equal content, other objects
    assert value_key(datetime.datetime(2026, 1, 1)) == repr(datetime.datetime(2026, 1, 1))


def test_a_timestamp_where_a_number_belongs_fails_every_time() -> None:
    import datetime

    bad = [{"key": "k", "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": datetime.datetime(2026, 1, 1)}]
    first = _errors(_pod("a", tolerations=bad))
    assert first and first == _errors(_pod("b", tolerations=bad))


def test_pod_conditions_that_passed_pass_again_and_bad_ones_fail_at_each_path() -> None:
    good = [{"type": "Ready", "status": "True"}]
    bad = [{"type": "Ready", "status": "True"}, {"status": "False"}]
    for name in ("a", "b"):
        assert _errors({**_pod(name), "status": {"phase": "Running", "conditions": good}}) == []
    for i in (3, 4):
        assert _errors({**_pod(f"c{i}"), "status": {"conditions": bad}}, f"items[{i}]") == [
            (f"items[{i}].status.conditions[1].type", "required value")]
