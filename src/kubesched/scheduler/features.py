"""Feature gates: behaviour of later Kubernetes releases that a scheduler may opt into, named and set
as kube-scheduler's ``--feature-gates`` flag sets them (``Name=true,Other=false``).

kubesched reproduces kube-scheduler v1.28, so every gate here is off unless asked for:

- ``SchedulerAsyncPreemption`` (KEP-4832, alpha in Kubernetes 1.32, beta and on by default from
  1.33): a preemptor's victims are deleted on a worker thread while the scheduling thread goes on
  with the next pods; the preemptor is nominated at once and not retried until the API calls are
  done (see :mod:`kubesched.scheduler.framework.preemption`).
"""

from __future__ import annotations

from collections.abc import Mapping

ASYNC_PREEMPTION = "SchedulerAsyncPreemption"

#: every gate kubesched knows, with its default
DEFAULTS: Mapping[str, bool] = {ASYNC_PREEMPTION: False}


class FeatureGateError(ValueError):
    """A ``--feature-gates`` value kube-scheduler would refuse, worded as it words it."""


def parse_feature_gates(text: str) -> dict[str, bool]:
    """``Name=true,Other=false`` as the gates it sets (kube-scheduler's ``--feature-gates``: names
    are case-sensitive; the values are Go's ``strconv.ParseBool`` spellings)."""
    gates: dict[str, bool] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name, raw = name.strip(), raw.strip()
        if not sep:
            raise FeatureGateError(f"missing bool value for {name}")
        if name not in DEFAULTS:
            raise FeatureGateError(f"unrecognized feature gate: {name}")
        value = _go_bool(raw)
        if value is None:
            raise FeatureGateError(f'invalid value of {name}={raw}, err: strconv.ParseBool: parsing "{raw}": '
                                   "invalid syntax")
        gates[name] = value
    return gates


def resolve(gates: Mapping[str, bool] | None) -> dict[str, bool]:
    """Every known gate's value: the defaults, with ``gates`` set (names checked)."""
    unknown = sorted(set(gates or ()) - set(DEFAULTS))
    if unknown:
        raise FeatureGateError(f"unrecognized feature gate: {unknown[0]}")
    return {**DEFAULTS, **(gates or {})}


def _go_bool(raw: str) -> bool | None:
    if raw in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if raw in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    return None
