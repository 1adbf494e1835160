"""The ``kubesched.io/usage`` annotation: what a pod actually uses (grammar in
:mod:`kubesched.cluster.embedded.kubelet.usage`). Parsed here so manifests are validated before a run."""

from __future__ import annotations

from typing import Any

from kubesched.api.durations import parse_duration
from kubesched.api.errors import InvalidQuantity
from kubesched.api.quantity import resource_amount

USAGE_ANNOTATION = "kubesched.io/usage"
USAGE_RESOURCES = ("memory", "cpu", "ephemeral-storage")
DEFAULT_USAGE_MODES = ("requests", "zero")

#: resource -> [(seconds after start, amount)], times strictly increasing
Profile = dict[str, list[tuple[float, int]]]


class UsageSyntaxError(ValueError):
    """The annotation does not follow the grammar in the module docstring."""


def parse_usage(text: str) -> Profile:
    """Parse a ``kubesched.io/usage`` value; raises :class:`UsageSyntaxError` with a message a
    user can act on."""
    profile: Profile = {}
    current: str | None = None
    items = [item.strip() for item in text.split(",")]
    if not text.strip():
        raise UsageSyntaxError("empty usage")
    for item in items:
        if not item:
            raise UsageSyntaxError(f"empty item in {text!r}")
        if "=" in item:
            name, _, rest = item.partition("=")
            name = name.strip()
            if name not in USAGE_RESOURCES:
                raise UsageSyntaxError(
                    f"unknown resource {name!r} (supported: {', '.join(USAGE_RESOURCES)})")
            if name in profile:
                raise UsageSyntaxError(f"resource {name!r} given twice")
            current = name
            profile[name] = []
        elif current is None:
            raise UsageSyntaxError(f"{item!r} must start with a resource name, e.g. memory=1Gi")
        else:
            rest = item
            if "@" not in rest:
                raise UsageSyntaxError(f"{item!r}: a profile point needs a time, e.g. 2Gi@30s")
        quantity, at, when = rest.partition("@")
        try:
            amount = resource_amount(current, quantity.strip())
        except (InvalidQuantity, ValueError, TypeError):
            raise UsageSyntaxError(f"invalid quantity {quantity.strip()!r} for {current}") from None
        if amount < 0:
            raise UsageSyntaxError(f"negative usage {quantity.strip()!r} for {current}")
        seconds = 0.0
        if at:
            try:
                seconds = parse_duration(when.strip())
            except ValueError as err:
                raise UsageSyntaxError(str(err)) from None
            if seconds < 0:
                raise UsageSyntaxError(f"negative time {when.strip()!r}")
        points = profile[current]
        if points and seconds <= points[-1][0]:
            raise UsageSyntaxError(f"times of the {current} profile must increase ({when.strip()!r})")
        points.append((seconds, amount))
    return profile


def check_usage_annotation(value: Any, path: str, errs: list[tuple[str, str]]) -> None:
    """Validator hook for manifests: append ``(path, message)`` if ``value`` is not a valid usage."""
    if not isinstance(value, str):
        errs.append((path, "must be a string"))
        return
    try:
        parse_usage(value)
    except UsageSyntaxError as err:
        errs.append((path, f"invalid {USAGE_ANNOTATION}: {err}"))
