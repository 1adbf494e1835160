"""Taints and tolerations."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
TAINT_EFFECTS = frozenset({NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE})
#: the effects the TaintToleration filter checks
FILTER_EFFECTS: tuple[str, ...] = (NO_SCHEDULE, NO_EXECUTE)


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Whether one toleration tolerates one taint.

    An empty toleration effect matches every effect; an empty key matches every key (valid only
    with ``Exists``); ``Exists`` ignores the value; ``Equal`` (or no operator) needs equal values.
    """
    effect = toleration.get("effect") or ""
    if effect and effect != (taint.get("effect") or ""):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def is_tolerated(taint: Mapping[str, Any], tolerations: Iterable[Mapping[str, Any]]) -> bool:
    """Whether any of ``tolerations`` tolerates ``taint``."""
    return any(tolerates(t, taint) for t in tolerations)


def find_untolerated_taint(
    taints: Sequence[Mapping[str, Any]] | None,
    tolerations: Sequence[Mapping[str, Any]] | None,
    effects: tuple[str, ...] = FILTER_EFFECTS,
) -> dict[str, Any] | None:
    """The first taint whose effect is in ``effects`` and that no toleration tolerates, else None."""
    tols = tolerations or ()
    for taint in taints or ():
        if taint.get("effect") in effects and not is_tolerated(taint, tols):
            return dict(taint)
    return None


def count_intolerable_prefer_no_schedule(
    taints: Sequence[Mapping[str, Any]] | None,
    tolerations: Sequence[Mapping[str, Any]] | None,
) -> int:
    """TaintToleration raw score: number of ``PreferNoSchedule`` taints not tolerated by the pod's
    tolerations whose effect is empty or ``PreferNoSchedule``."""
    relevant = [t for t in tolerations or () if (t.get("effect") or "") in ("", PREFER_NO_SCHEDULE)]
    return sum(
        1
        for taint in taints or ()
        if taint.get("effect") == PREFER_NO_SCHEDULE and not is_tolerated(taint, relevant)
    )


def format_taint(taint: Mapping[str, Any]) -> str:
    """The ``{key: value}`` text kube-scheduler uses in "had untolerated taint {key: value}"."""
    return f"{{{taint.get('key') or ''}: {taint.get('value') or ''}}}"
