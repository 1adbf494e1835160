"""Field-level checks shared by the validators.  Each check appends ``(path, message)`` pairs to
``errs`` and returns the value when it has the expected type (None otherwise)."""

from __future__ import annotations

import functools
import marshal
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from kubesched.api.durations import parse_duration
from kubesched.api.errors import InvalidQuantity
from kubesched.api.quantity import parse_quantity

LABEL_SELECTOR_OPERATOR_ORDER = ("In", "NotIn", "Exists", "DoesNotExist")

Errors = list[tuple[str, str]]

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

_DNS_LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME_RE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_SIMPLE_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")

# The same names, keys and label values come back in every object of a dump: each is matched once.
# Caches of predicates (True or False), bounded; a miss costs what matching always cost.
_MEMO = 1 << 16


@lru_cache(maxsize=_MEMO)
def _simple_key(text: str) -> bool:
    return _SIMPLE_KEY_RE.fullmatch(text) is not None


@lru_cache(maxsize=_MEMO)
def _dns_label(value: str) -> bool:
    return len(value) <= 63 and _DNS_LABEL_RE.fullmatch(value) is not None


@lru_cache(maxsize=_MEMO)
def _dns_subdomain(value: str) -> bool:
    return len(value) <= 253 and _DNS_SUBDOMAIN_RE.fullmatch(value) is not None


@lru_cache(maxsize=_MEMO)
def _qualified_name(value: str) -> bool:
    prefix, _, name = value.rpartition("/")
    ok = bool(name) and len(name) <= 63 and _QUALIFIED_NAME_RE.fullmatch(name) is not None
    if "/" in value:
        ok = ok and len(prefix) <= 253 and _DNS_SUBDOMAIN_RE.fullmatch(prefix) is not None
    return ok


@lru_cache(maxsize=_MEMO)
def _label_value(value: str) -> bool:
    return not value or (len(value) <= 63 and _QUALIFIED_NAME_RE.fullmatch(value) is not None)


#: how many passing values each :func:`passed_once` check remembers
_PASSED_MEMO = 1 << 16


def passed_once(check: Callable[[Any, str, Errors], None]) -> Callable[[Any, str, Errors], None]:
    """``check`` (a pure check of a value, whose path only words its messages) run once per distinct
    value that passes it: a dump's pods repeat the same tolerations, affinities and spreading
    constraints thousands of times. Values are told apart by :func:`value_key`; a value that fails
    is checked again each time, so its errors are always reported in full, at its own path."""
    passed: set[bytes | str] = set()

    @functools.wraps(check)
    def run(value: Any, path: str, errs: Errors) -> None:
        if value is None:
            check(value, path, errs)
            return
        key = value_key(value)
        if key in passed:
            return
        before = len(errs)
        check(value, path, errs)
        if len(errs) == before and len(passed) < _PASSED_MEMO:
            passed.add(key)

    return run


def value_key(value: Any) -> bytes | str:
    """A key that tells apart every two values JSON or YAML can give that differ in content or type:
    ``marshal``'s format 2 (the value's content, exactly: ``1``, ``1.0``, ``True``, ``nan`` and
    ``"1"`` differ, and it writes nothing of the objects' identity; twice as fast as ``repr``), or
    ``repr`` for a value it cannot write (a YAML timestamp). A text never equals bytes, so the two
    kinds of key never meet."""
    try:
        return marshal.dumps(value, 2)
    except ValueError:
        return repr(value)


def key_path(path: str, key: object) -> str:
    """``path.key``; ``path[key]`` for keys that are not simple identifiers (labels, resources
    with a domain)."""
    text = key if isinstance(key, str) else str(key)
    if _simple_key(text):
        return f"{path}.{text}" if path else text
    return f"{path}[{text}]"


def idx_path(path: str, index: int) -> str:
    return f"{path}[{index}]"


def type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


def expect_dict(value: Any, path: str, errs: Errors, *, required: bool = False) -> dict[str, Any] | None:
    if value is None:
        if required:
            errs.append((path, "required value"))
        return None
    if not isinstance(value, dict):
        errs.append((path, f"must be a mapping, got {type_name(value)}"))
        return None
    return value


def expect_list(value: Any, path: str, errs: Errors, *, required: bool = False) -> list[Any] | None:
    if value is None:
        if required:
            errs.append((path, "required value"))
        return None
    if not isinstance(value, list):
        errs.append((path, f"must be a list, got {type_name(value)}"))
        return None
    return value


def expect_str(
    value: Any, path: str, errs: Errors, *, required: bool = False, non_empty: bool = False
) -> str | None:
    if value is None:
        if required:
            errs.append((path, "required value"))
        return None
    if not isinstance(value, str):
        errs.append((path, f"must be a string, got {type_name(value)}"))
        return None
    if non_empty and not value:
        errs.append((path, "must not be empty"))
        return None
    return value


def expect_int(
    value: Any,
    path: str,
    errs: Errors,
    *,
    required: bool = False,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int | None:
    if value is None:
        if required:
            errs.append((path, "required value"))
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        errs.append((path, f"must be an integer, got {type_name(value)}"))
        return None
    if minimum is not None and value < minimum:
        errs.append((path, f"must be greater than or equal to {minimum}, got {value}"))
        return None
    if maximum is not None and value > maximum:
        errs.append((path, f"must be less than or equal to {maximum}, got {value}"))
        return None
    return value


def expect_bool(value: Any, path: str, errs: Errors) -> bool | None:
    if value is None:
        return None
    if not isinstance(value, bool):
        errs.append((path, f"must be a boolean, got {type_name(value)}"))
        return None
    return value


def expect_enum(value: Any, allowed: Iterable[str], path: str, errs: Errors, *, required: bool = False) -> str | None:
    text = expect_str(value, path, errs, required=required)
    if text is None:
        return None
    options = list(allowed)
    if text not in options:
        shown = ", ".join(f'"{o}"' if not o else o for o in options)
        errs.append((path, f'unsupported value "{text}": must be one of {shown}'))
        return None
    return text


def check_dns_label(value: str, path: str, errs: Errors) -> None:
    if not _dns_label(value):
        errs.append(
            (path, f'invalid name "{value}": must be a DNS label (at most 63 lowercase alphanumerics or "-", '
                   "starting and ending with an alphanumeric)")
        )


def check_dns_subdomain(value: str, path: str, errs: Errors) -> None:
    if not _dns_subdomain(value):
        errs.append(
            (path, f'invalid name "{value}": must be a DNS subdomain (at most 253 lowercase alphanumerics, '
                   '"-" or ".", starting and ending with an alphanumeric)')
        )


def check_qualified_name(value: str, path: str, errs: Errors) -> None:
    """A label/annotation key: ``[prefix/]name``, prefix a DNS subdomain, name ≤ 63 characters."""
    if not _qualified_name(value):
        errs.append((path, f'invalid key "{value}": must be a qualified name ([prefix/]name)'))


def check_label_value(value: str, path: str, errs: Errors) -> None:
    if not _label_value(value):
        errs.append(
            (path, f'invalid label value "{value}": at most 63 alphanumerics, "-", "_" or ".", '
                   "starting and ending with an alphanumeric")
        )


def check_string_map(value: Any, path: str, errs: Errors, *, labels: bool) -> dict[str, Any] | None:
    """A ``map[string]string`` of labels (keys and values checked) or annotations (keys checked)."""
    d = expect_dict(value, path, errs)
    if d is None:
        return None
    for k, v in d.items():
        p = key_path(path, k)
        if not isinstance(k, str):
            errs.append((p, f"key must be a string, got {type_name(k)}"))
            continue
        check_qualified_name(k, p, errs)
        if expect_str(v, p, errs, required=True) is not None and labels:
            check_label_value(v, p, errs)
    return d


def check_quantity(value: Any, path: str, errs: Errors, *, non_negative: bool = True) -> None:
    if value is None:
        errs.append((path, "required value"))
        return
    try:
        amount = parse_quantity(value)
    except InvalidQuantity:
        shown = value if isinstance(value, str) else repr(value)
        errs.append((path, f'invalid quantity "{shown}"'))
        return
    if non_negative and amount < 0:
        errs.append((path, f'invalid quantity "{value}": must be greater than or equal to 0'))


def check_resource_list(value: Any, path: str, errs: Errors) -> dict[str, Any] | None:
    """``{resourceName: quantity}`` with every quantity valid and non-negative."""
    d = expect_dict(value, path, errs)
    if d is None:
        return None
    for name, q in d.items():
        p = key_path(path, name)
        if not isinstance(name, str) or not name:
            errs.append((p, "resource name must be a non-empty string"))
            continue
        check_quantity(q, p, errs)
    return d


def check_duration(value: Any, path: str, errs: Errors, *, required: bool = False) -> float | None:
    if value is None:
        if required:
            errs.append((path, "required value"))
        return None
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        errs.append((path, str(exc)))
        return None
    if seconds < 0:
        errs.append((path, f"duration {value!r} must not be negative"))
        return None
    return seconds


def check_selector_requirement(
    expr: Any, path: str, errs: Errors, *, operators: Iterable[str], key_field: str = "key"
) -> None:
    """A label-selector style requirement ``{key, operator, values}``."""
    d = expect_dict(expr, path, errs)
    if d is None:
        return
    key = expect_str(d.get(key_field), key_path(path, key_field), errs, required=True, non_empty=True)
    if key is not None and key_field == "key":
        check_qualified_name(key, key_path(path, key_field), errs)
    op = expect_enum(d.get("operator"), operators, key_path(path, "operator"), errs, required=True)
    values_path = key_path(path, "values")
    values = expect_list(d.get("values"), values_path, errs) or []
    for i, v in enumerate(values):
        expect_str(v, idx_path(values_path, i), errs, required=True)
    if op in ("In", "NotIn") and not values:
        errs.append((values_path, f"must be specified when `operator` is '{op}'"))
    if op in ("Exists", "DoesNotExist") and values:
        errs.append((values_path, f"may not be specified when `operator` is '{op}'"))


def check_label_selector(value: Any, path: str, errs: Errors, *, required: bool = False) -> dict[str, Any] | None:
    d = expect_dict(value, path, errs, required=required)
    if d is None:
        return None
    check_string_map(d.get("matchLabels"), key_path(path, "matchLabels"), errs, labels=True)
    exprs_path = key_path(path, "matchExpressions")
    for i, expr in enumerate(expect_list(d.get("matchExpressions"), exprs_path, errs) or []):
        check_selector_requirement(expr, idx_path(exprs_path, i), errs, operators=LABEL_SELECTOR_OPERATOR_ORDER)
    for extra in sorted(set(d) - {"matchLabels", "matchExpressions"}):
        errs.append((key_path(path, str(extra)), "unknown field in a label selector"))
    return d


def check_int_or_percent(value: Any, path: str, errs: Errors) -> None:
    """An IntOrString: a non-negative integer or ``"N%"``."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        errs.append((path, f"must be an integer or a percentage string, got {type_name(value)}"))
    elif isinstance(value, int):
        if value < 0:
            errs.append((path, f"must be greater than or equal to 0, got {value}"))
    elif not re.fullmatch(r"[0-9]+%", value):
        errs.append((path, f'invalid value "{value}": must be an integer or a percentage like "50%"'))
    elif int(value[:-1]) > 100:
        errs.append((path, f'invalid value "{value}": must not be greater than 100%'))
