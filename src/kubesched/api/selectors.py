"""Label selectors, node selector terms and node affinity matching."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.k8s.memo import IdentityMemo

LABEL_SELECTOR_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
NODE_NAME_FIELD = "metadata.name"

_INT_RE = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``matchExpressions`` entry of a label selector."""

    key: str
    operator: str
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        return self.key not in labels  # DoesNotExist


def _requirement_from_dict(expr: Any) -> Requirement:
    if not isinstance(expr, Mapping):
        raise ValueError(f"label selector requirement must be a mapping, got {type(expr).__name__}")
    key = expr.get("key")
    if not isinstance(key, str) or not key:
        raise ValueError("label selector requirement needs a non-empty string key")
    op = expr.get("operator")
    if op not in LABEL_SELECTOR_OPERATORS:
        raise ValueError(
            f"label selector operator {op!r} is not supported: must be one of In, NotIn, Exists, DoesNotExist"
        )
    raw_values = expr.get("values") or []
    if not isinstance(raw_values, list) or not all(isinstance(v, str) for v in raw_values):
        raise ValueError(f"label selector requirement {key!r}: values must be a list of strings")
    if op in ("In", "NotIn") and not raw_values:
        raise ValueError(f"label selector requirement {key!r}: operator {op} needs at least one value")
    if op in ("Exists", "DoesNotExist") and raw_values:
        raise ValueError(f"label selector requirement {key!r}: operator {op} must not have values")
    return Requirement(key, op, frozenset(raw_values))


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A ``metav1.LabelSelector``.

    ``LabelSelector.from_dict(None)`` (a nil selector) matches nothing; ``from_dict({})`` matches
    everything; ``is_empty`` is True for both.  Hashable, so usable as a cache key.
    """

    match_labels: tuple[tuple[str, str], ...] = ()
    requirements: tuple[Requirement, ...] = ()
    is_nil: bool = False

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> LabelSelector:
        """Build from ``{matchLabels: {...}, matchExpressions: [{key, operator, values}]}``.

        Raises ValueError for unknown operators, values given to Exists/DoesNotExist, In/NotIn
        without values, or values that are not strings.
        """
        if d is None:
            return cls(is_nil=True)
        if not isinstance(d, Mapping):
            raise ValueError(f"label selector must be a mapping, got {type(d).__name__}")
        ml = d.get("matchLabels") or {}
        if not isinstance(ml, Mapping):
            raise ValueError("label selector matchLabels must be a mapping")
        for k, v in ml.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ValueError(f"label selector matchLabels entry {k!r}: {v!r} must map a string to a string")
        exprs = d.get("matchExpressions") or []
        if not isinstance(exprs, list):
            raise ValueError("label selector matchExpressions must be a list")
        return cls(
            match_labels=tuple(sorted(ml.items())),
            requirements=tuple(_requirement_from_dict(e) for e in exprs),
        )

    @classmethod
    def from_labels(cls, labels: Mapping[str, str]) -> LabelSelector:
        """A selector requiring exactly these labels (e.g. a Service's ``spec.selector``)."""
        return cls(match_labels=tuple(sorted(labels.items())))

    @property
    def is_empty(self) -> bool:
        """True for a nil selector and for ``{}`` (no labels, no expressions)."""
        return not self.match_labels and not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.is_nil:
            return False
        labels = labels or {}
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        return all(r.matches(labels) for r in self.requirements)


def _node_labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def _node_name(node: Mapping[str, Any]) -> str:
    return (node.get("metadata") or {}).get("name") or ""


_LABEL_VALUE_RE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def parse_int64(text: Any) -> int | None:
    """Go ``strconv.ParseInt(text, 10, 64)``: optional sign, decimal digits, int64 range."""
    if isinstance(text, str) and _INT_RE.fullmatch(text):
        value = int(text)
        if _INT64_MIN <= value <= _INT64_MAX:
            return value
    return None


def is_valid_label_value(value: Any) -> bool:
    """apimachinery ``validation.IsValidLabelValue``: at most 63 characters, empty or alphanumeric at
    both ends with ``-_.`` allowed inside."""
    return isinstance(value, str) and len(value) <= 63 and _LABEL_VALUE_RE.fullmatch(value) is not None


def node_selector_requirement_error(expr: Any) -> str | None:
    """Why ``labels.NewRequirement`` (via ``nodeSelectorRequirementsAsSelector``) rejects a node
    selector ``matchExpressions`` entry, or None when it parses.

    Beyond what API validation checks, the scheduler also requires every value to be a valid label
    value and Gt/Lt values to be int64 integers: e.g. ``Lt ["-1"]`` or ``NotIn ["a b"]`` do not parse."""
    if not isinstance(expr, Mapping):
        return "node selector requirement must be a mapping"
    key = expr.get("key")
    op = expr.get("operator")
    values = expr.get("values") or []
    if not isinstance(key, str) or not key:
        return "key: must be a non-empty string"
    if not isinstance(values, list):
        return "values: must be a list"
    if op in ("In", "NotIn"):
        if not values:
            return "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
    elif op in ("Exists", "DoesNotExist"):
        if values:
            return "values: Invalid value: values set must be empty for exists and does not exist"
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            return "values: Invalid value: for 'Gt', 'Lt' operators, exactly one value is required"
        for v in values:
            if parse_int64(v) is None:
                return f"values[0]: Invalid value: {v!r}: for 'Gt', 'Lt' operators, the value must be an integer"
    else:
        return f"operator: Unsupported value: {op!r}"
    for i, v in enumerate(values):
        if not is_valid_label_value(v):
            return f"values[{i}]: Invalid value: {v!r}: a valid label must be an empty string or consist of " \
                   "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
    return None


def node_selector_term_error(term: Any) -> str | None:
    """Why a ``NodeSelectorTerm`` fails to parse upstream (``newNodeSelectorTerm``), or None.  A term
    that does not parse never matches (required terms) / makes NodeAffinity PreScore fail
    (preferred terms).  matchFields In/NotIn need exactly one value."""
    if not isinstance(term, Mapping):
        return "node selector term must be a mapping"
    for i, expr in enumerate(term.get("matchExpressions") or []):
        err = node_selector_requirement_error(expr)
        if err is not None:
            return f"matchExpressions[{i}].{err}"
    for i, f in enumerate(term.get("matchFields") or []):
        if not isinstance(f, Mapping):
            return f"matchFields[{i}]: must be a mapping"
        if f.get("operator") not in ("In", "NotIn"):
            return f"matchFields[{i}].operator: Unsupported value: {f.get('operator')!r}"
        values = f.get("values") or []
        if not isinstance(values, list) or len(values) != 1 or not isinstance(values[0], str):
            return f"matchFields[{i}].values: Invalid value: {values!r}: must have one element"
    return None


#: :func:`node_selector_term_error` per term object (terms are parts of objects that are replaced,
#: never changed in place)
_cached_term_error: IdentityMemo[Mapping[str, Any], str | None] = IdentityMemo(
    node_selector_term_error, 4096)


def _expression_matches(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One (parseable) node selector requirement against node labels (``labels.Requirement.Matches``)."""
    key = expr["key"]
    op = expr.get("operator")
    values = expr.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    # Gt / Lt: the node's value must parse as an int64
    bound = parse_int64(values[0])
    actual = parse_int64(labels.get(key))
    if bound is None or actual is None:
        return False
    return actual > bound if op == "Gt" else actual < bound


def _field_matches(expr: Mapping[str, Any], node_name: str) -> bool:
    """``fields.OneTermEqualSelector`` / ``OneTermNotEqualSelector`` against the node's field set,
    which holds only ``metadata.name`` (any other key reads as "")."""
    actual = node_name if expr.get("key") == NODE_NAME_FIELD else ""
    value = expr["values"][0]
    return actual == value if expr.get("operator") == "In" else actual != value


def node_selector_term_matches(term: Mapping[str, Any] | None, node: Mapping[str, Any]) -> bool:
    """A ``NodeSelectorTerm``: all matchExpressions (on node labels) and all matchFields (only
    ``metadata.name`` In/NotIn) must match.  A term with neither matches nothing, and so does a term
    that fails to parse (:func:`node_selector_term_error`)."""
    if not term:
        return False
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    if _cached_term_error(term) is not None:
        return False
    if exprs:
        labels = _node_labels(node)
        if not all(_expression_matches(e, labels) for e in exprs):
            return False
    if fields:
        name = _node_name(node)
        # upstream skips the field check for a node without a name (empty field set)
        if name and not all(_field_matches(f, name) for f in fields):
            return False
    return True


def node_selector_matches(node_selector: Mapping[str, Any] | None, node: Mapping[str, Any]) -> bool:
    """A ``NodeSelector`` (``{nodeSelectorTerms: [...]}``): the terms are ORed.  None → True;
    no terms → False."""
    if node_selector is None:
        return True
    terms = node_selector.get("nodeSelectorTerms") or []
    return any(isinstance(t, Mapping) and node_selector_term_matches(t, node) for t in terms)


def _node_affinity(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}


def required_node_affinity(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod's ``requiredDuringSchedulingIgnoredDuringExecution`` node selector, or None."""
    return _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")


def pod_node_selector_matches(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """``spec.nodeSelector`` only: every label must be present on the node with the same value."""
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    if not selector:
        return True
    labels = _node_labels(node)
    return all(labels.get(k) == v for k, v in selector.items())


def pod_matches_node_selector_and_affinity(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """The NodeAffinity filter: ``spec.nodeSelector`` AND required node affinity."""
    if not pod_node_selector_matches(pod, node):
        return False
    return node_selector_matches(required_node_affinity(pod), node)


def preferred_terms_error(preferred: Any) -> str | None:
    """Upstream ``nodeaffinity.NewPreferredSchedulingTerms``: the first parse error among the
    preferred scheduling terms that count (weight != 0 and a non-empty preference), or None."""
    for i, pref in enumerate(preferred or []):
        if not isinstance(pref, Mapping):
            return f"[{i}]: must be a mapping"
        term = pref.get("preference") or {}
        if not pref.get("weight") or not (term.get("matchExpressions") or term.get("matchFields")):
            continue
        err = _cached_term_error(term)
        if err is not None:
            return f"[{i}].{err}"
    return None


def preferred_node_affinity_score(pod: Mapping[str, Any], node: Mapping[str, Any]) -> int:
    """Sum of the weights of the pod's matching ``preferredDuringSchedulingIgnoredDuringExecution``
    terms (the NodeAffinity raw score).  An empty preference or a zero weight counts nothing (a term
    that fails to parse counts nothing either; upstream's PreScore fails first, see
    :func:`preferred_terms_error`)."""
    total = 0
    for pref in _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution") or []:
        if not isinstance(pref, Mapping):
            continue
        weight = pref.get("weight") or 0
        if weight and node_selector_term_matches(pref.get("preference"), node):
            total += int(weight)
    return total


def _term_node_names(term: Mapping[str, Any]) -> set[str] | None:
    """Names a term restricts to via ``metadata.name In`` matchFields (intersected when several
    such requirements exist in the term), or None if it has none."""
    names: set[str] | None = None
    for f in term.get("matchFields") or []:
        if isinstance(f, Mapping) and f.get("key") == NODE_NAME_FIELD and f.get("operator") == "In":
            values = {v for v in f.get("values") or [] if isinstance(v, str)}
            names = values if names is None else names & values
    return names


def required_node_names(pod: Mapping[str, Any]) -> set[str] | None:
    """The NodeAffinity PreFilter node set: if every required term names nodes with a
    ``metadata.name In [...]`` matchField, the union of those names; otherwise None (no restriction).
    None as well when the pod has no required node affinity.  An empty set means the terms
    contradict each other (upstream: "pod affinity terms conflict")."""
    required = required_node_affinity(pod)
    if not required:
        return None
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return None
    result: set[str] = set()
    for term in terms:
        names = _term_node_names(term) if isinstance(term, Mapping) else None
        if names is None:
            return None
        result |= names
    return result
