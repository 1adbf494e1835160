"""Node selectors matched against every node of the node table at once.

``spec.nodeSelector``, a ``NodeSelector``'s terms and preferred scheduling terms are compiled once
(per pod, or per plugin for ``addedAffinity``) into requirements on label columns and on the node
name, then evaluated as a few array operations. The answer is exactly the per-node one of
:mod:`kubesched.api.selectors`; whatever the compiled form cannot represent raises
:class:`Unsupported` at compile time (then the caller asks per node), and a column the table cannot
represent makes :meth:`Term.mask` return None (likewise).

A pod's compiled selectors are kept on its PodInfo (:func:`pod_required`, :func:`pod_preferred`) and
the nodes a required selector admits in the node table's memo (:func:`required_mask`);
PodTopologySpread's nodeAffinityPolicy reads them too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from kubesched.api.selectors import (
    NODE_NAME_FIELD,
    node_selector_term_error,
    parse_int64,
    required_node_affinity,
)
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.framework.views import NodeTableView

#: weights beyond this are left to the per-node score (int64 sums stay exact below it)
_MAX_WEIGHT = 2**31


class Unsupported(Exception):
    """The selector has a shape the vector form does not represent (or the per-node form raises)."""


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    """One parsed ``matchExpressions`` entry (``labels.Requirement``); ``bound`` is Gt/Lt's integer."""

    key: str
    operator: str
    values: tuple[str, ...]
    bound: int = 0

    def mask(self, table: NodeTableView) -> np.ndarray | None:
        """Per node: whether its labels meet the requirement."""
        column = table.label_column(self.key)
        if column is None:
            return None
        codes = column.codes
        op = self.operator
        if op == "Exists":
            return codes >= 0
        if op == "DoesNotExist":
            return codes < 0
        if op in ("In", "NotIn"):
            # one entry per code, the last for nodes without the key (absent codes are negative)
            lookup = np.full(len(column.code) + 1, op == "NotIn", dtype=bool)
            for value in self.values:
                code = column.code.get(value)
                if code is not None:
                    lookup[code] = op == "In"
            return lookup[codes]
        # Gt / Lt: only values that parse as an int64 can match; a missing key never does
        ints, parsed = column.as_int64()
        hit = parsed & (ints > self.bound if op == "Gt" else ints < self.bound)
        return np.append(hit, False)[codes]


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One ``matchFields`` entry: In/NotIn one value, on ``metadata.name`` (any other field reads
    as the empty string). A node whose object has no name passes (its field set is empty)."""

    on_name: bool
    operator: str
    value: str

    def mask(self, table: NodeTableView) -> np.ndarray:
        """Per node: whether the field meets the requirement."""
        if self.on_name:
            equal = np.zeros(table.n, dtype=bool)
            index = table.node_index(self.value)
            if index is not None:
                equal[index] = True
        else:
            equal = np.full(table.n, self.value == "", dtype=bool)
        mask = equal if self.operator == "In" else ~equal
        mask[table.nameless] = True
        return mask


@dataclass(frozen=True, slots=True)
class Term:
    """A ``NodeSelectorTerm`` that can match: all its requirements hold."""

    requirements: tuple[LabelRequirement | FieldRequirement, ...]

    def mask(self, table: NodeTableView) -> np.ndarray | None:
        mask = np.ones(table.n, dtype=bool)
        for requirement in self.requirements:
            part = requirement.mask(table)
            if part is None:
                return None
            mask &= part
        return mask


@dataclass(frozen=True, slots=True)
class Selector:
    """A ``NodeSelector``: its terms that can match, ORed (none: no node matches)."""

    terms: tuple[Term, ...]

    def mask(self, table: NodeTableView) -> np.ndarray | None:
        mask = np.zeros(table.n, dtype=bool)
        for term in self.terms:
            part = term.mask(table)
            if part is None:
                return None
            mask |= part
        return mask


def compile_term(term: Mapping[str, Any]) -> Term | None:
    """A term as :func:`~kubesched.api.selectors.node_selector_term_matches` reads it; None for a
    term that matches no node (empty, or failing to parse)."""
    if not term:
        return None
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return None
    if node_selector_term_error(term) is not None:
        return None
    # the term parsed: mappings with a string key, a known operator and string values
    requirements: list[LabelRequirement | FieldRequirement] = []
    for expr in exprs:
        op = expr.get("operator")
        values = tuple(expr.get("values") or ())
        bound = 0
        if op in ("Gt", "Lt"):
            parsed = parse_int64(values[0])
            if parsed is None:
                raise Unsupported("Gt/Lt bound does not parse")
            bound = parsed
        requirements.append(LabelRequirement(expr["key"], op, values, bound))
    for field in fields:
        requirements.append(FieldRequirement(field.get("key") == NODE_NAME_FIELD, field["operator"], field["values"][0]))
    return Term(tuple(requirements))


def compile_node_selector(node_selector: Any) -> Selector | None:
    """A ``NodeSelector`` as :func:`~kubesched.api.selectors.node_selector_matches` reads it (None:
    every node matches)."""
    if node_selector is None:
        return None
    if not isinstance(node_selector, Mapping):
        raise Unsupported("node selector is not a mapping")
    terms = []
    for raw in node_selector.get("nodeSelectorTerms") or []:
        if isinstance(raw, Mapping):
            term = compile_term(raw)
            if term is not None:
                terms.append(term)
    return Selector(tuple(terms))


def compile_pod_node_selector(pod_spec: Mapping[str, Any]) -> Term | None:
    """``spec.nodeSelector`` as one term of ``key In [value]`` requirements (None: no selector)."""
    selector = pod_spec.get("nodeSelector") or {}
    if not selector:
        return None
    if not isinstance(selector, Mapping):
        raise Unsupported("nodeSelector is not a mapping")
    requirements: list[LabelRequirement | FieldRequirement] = []
    for key, value in selector.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise Unsupported("nodeSelector entry is not a string pair")
        requirements.append(LabelRequirement(key, "In", (value,)))
    return Term(tuple(requirements))


def compile_preferred(preferred: Any) -> tuple[tuple[int, Term], ...]:
    """Preferred scheduling terms as (weight, term) pairs, keeping only those that can add to a
    node's score (a weight and a preference that can match)."""
    out = []
    for pref in preferred or []:
        if not isinstance(pref, Mapping):
            continue
        weight = pref.get("weight") or 0
        preference = pref.get("preference")
        if not weight or not preference:
            continue
        if not isinstance(preference, Mapping):
            raise Unsupported("preference is not a mapping")
        term = compile_term(preference)
        if term is None:
            continue
        value = int(weight)
        if not -_MAX_WEIGHT < value < _MAX_WEIGHT:
            raise Unsupported("weight out of range")
        out.append((value, term))
    return tuple(out)


def weighted_sum(terms: tuple[tuple[int, Term], ...], table: NodeTableView) -> np.ndarray | None:
    """Per node, the sum of the weights of the terms it matches (None: ask per node)."""
    total = np.zeros(table.n, dtype=np.int64)
    for weight, term in terms:
        mask = term.mask(table)
        if mask is None:
            return None
        total += weight * mask
    return total


# -- a pod's compiled selectors, kept on its PodInfo -------------------------------------------
#: PodInfo.cache keys of the pod's compiled selectors (the plugin's own addedAffinity is kept apart)
REQUIRED_CACHE_KEY = "NodeAffinity/required"
PREFERRED_CACHE_KEY = "NodeAffinity/preferred"

_T = TypeVar("_T")


class Uncompiled:
    """Marks a compiled form that could not be built (the per-node methods answer instead)."""


UNCOMPILED = Uncompiled()


def compiled(build: Callable[[], _T]) -> _T | Uncompiled:
    """``build()``, or :data:`UNCOMPILED` when it raises: :class:`Unsupported` for inputs the
    compiled form does not represent, anything else for malformed input on which the per-node
    reference may raise too (it then does so itself, node by node, as before)."""
    try:
        return build()
    except Exception:  # noqa: BLE001 - see above; Unsupported included
        return UNCOMPILED


def pod_required(pod: PodInfo) -> tuple[Term | None, Selector | None] | Uncompiled:
    """The pod's nodeSelector and required node affinity, compiled once per PodInfo (PodTopologySpread's
    nodeAffinityPolicy reads them too)."""
    hit = pod.cache.get(REQUIRED_CACHE_KEY)
    if hit is None:
        hit = pod.cache[REQUIRED_CACHE_KEY] = compiled(
            lambda: (compile_pod_node_selector(pod.spec), compile_node_selector(required_node_affinity(pod.obj)))
        )
    return hit  # type: ignore[no-any-return]


def pod_preferred(pod: PodInfo) -> tuple[tuple[int, Term], ...] | Uncompiled:
    """The pod's preferred node affinity terms, compiled once per PodInfo."""
    hit = pod.cache.get(PREFERRED_CACHE_KEY)
    if hit is None:
        hit = pod.cache[PREFERRED_CACHE_KEY] = compiled(
            lambda: compile_preferred(
                ((pod.spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
                    "preferredDuringSchedulingIgnoredDuringExecution"
                )
            )
        )
    return hit  # type: ignore[no-any-return]


def required_mask(table: NodeTableView, parts: tuple[Term | Selector | None, ...]) -> np.ndarray | None:
    """Which nodes meet every one of ``parts`` (None: some label column cannot answer, ask per
    node). Worked out for all nodes once per distinct selector and kept in the table's node memo
    (pods of one workload share their selectors, labels change seldom): do not modify it."""
    memo = table.node_memo()
    key = (REQUIRED_CACHE_KEY, *parts)
    mask = memo.get(key, UNCOMPILED)
    if mask is UNCOMPILED:
        mask = np.ones(table.n, dtype=bool)
        for part in parts:
            if part is not None:
                part_mask = part.mask(table)
                if part_mask is None:
                    mask = None
                    break
                mask &= part_mask
        memo[key] = mask
    return mask  # type: ignore[no-any-return]
