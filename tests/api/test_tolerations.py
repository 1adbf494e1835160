from __future__ import annotations

import pytest

from kubesched.api.tolerations import (
    count_intolerable_prefer_no_schedule,
    find_untolerated_taint,
    format_taint,
    tolerates,
)

TAINT = {"key": "k", "value": "v", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        ({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "value": "v"}, True),
        ({"key": "k", "value": "v", "effect": ""}, True),
        ({"key": "k", "value": "v", "effect": "NoExecute"}, False),
        ({"key": "k", "value": "other"}, False),
        ({"key": "k"}, False),
        ({"key": "k", "operator": "Exists"}, True),
        ({"key": "k", "operator": "Exists", "effect": "PreferNoSchedule"}, False),
        ({"key": "other", "operator": "Exists"}, False),
        ({"operator": "Exists"}, True),
        ({"operator": "Exists", "effect": "NoSchedule"}, True),
        ({"operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "k", "operator": "Gt", "value": "v"}, False),
    ],
)
def test_toleration_matching_rules(toleration: dict, expected: bool) -> None:
    assert tolerates(toleration, TAINT) is expected


def test_equal_toleration_matches_taint_without_value_only_with_empty_value() -> None:
    taint = {"key": "k", "effect": "NoSchedule"}
    assert tolerates({"key": "k", "operator": "Equal"}, taint)
    assert tolerates({"key": "k", "operator": "Equal", "value": ""}, taint)
    assert not tolerates({"key": "k", "operator": "Equal", "value": "x"}, taint)


TAINTS = [
    {"key": "soft", "value": "1", "effect": "PreferNoSchedule"},
    {"key": "hard", "value": "2", "effect": "NoSchedule"},
    {"key": "evict", "value": "3", "effect": "NoExecute"},
]


@pytest.mark.parametrize(
    ("tolerations", "effects", "expected_key"),
    [
        ([], ("NoSchedule", "NoExecute"), "hard"),
        ([{"key": "hard", "operator": "Exists"}], ("NoSchedule", "NoExecute"), "evict"),
        ([{"key": "hard", "operator": "Exists"}, {"key": "evict", "operator": "Exists"}],
         ("NoSchedule", "NoExecute"), None),
        ([{"operator": "Exists"}], ("NoSchedule", "NoExecute"), None),
        ([], ("NoSchedule",), "hard"),
        ([], ("PreferNoSchedule",), "soft"),
        ([], (), None),
    ],
)
def test_find_untolerated_taint_returns_first_untolerated(tolerations: list, effects: tuple, expected_key: str | None) -> None:
    found = find_untolerated_taint(TAINTS, tolerations, effects)
    assert (found or {}).get("key") == expected_key


def test_find_untolerated_taint_accepts_none() -> None:
    assert find_untolerated_taint(None, None, ("NoSchedule",)) is None


@pytest.mark.parametrize(
    ("taints", "tolerations", "count"),
    [
        ([], [], 0),
        (TAINTS, [], 1),
        ([{"key": "a", "effect": "PreferNoSchedule"}, {"key": "b", "effect": "PreferNoSchedule"}], [], 2),
        (TAINTS, [{"key": "soft", "operator": "Exists"}], 0),
        (TAINTS, [{"key": "soft", "operator": "Exists", "effect": "PreferNoSchedule"}], 0),
        # tolerations with NoSchedule/NoExecute effect are not considered for the score
        (TAINTS, [{"key": "soft", "operator": "Exists", "effect": "NoSchedule"}], 1),
        (TAINTS, [{"operator": "Exists"}], 0),
        (TAINTS, [{"key": "soft", "value": "2"}], 1),
    ],
)
def test_count_intolerable_prefer_no_schedule(taints: list, tolerations: list, count: int) -> None:
    assert count_intolerable_prefer_no_schedule(taints, tolerations) == count


@pytest.mark.parametrize(
    ("taint", "text"),
    [({"key": "k", "value": "v", "effect": "NoSchedule"}, "{k: v}"), ({"key": "k", "effect": "NoSchedule"}, "{k: }")],
)
def test_format_taint_like_kube_scheduler(taint: dict, text: str) -> None:
    assert format_taint(taint) == text
