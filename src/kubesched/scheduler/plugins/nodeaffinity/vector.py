"""Node selectors matched against every node of the node table at once.

``spec.nodeSelector``, a ``NodeSelector``'s terms and preferred scheduling terms are compiled once
(per pod, or per plugin for ``addedAffinity``) into requirements on label columns and on the node
name, then evaluated as a few array operations. The answer is exactly the per-node one of
:mod:`kubesched.api.selectors`; whatever the compiled form cannot represent raises
:class:`Unsupported` at compile time (then the caller asks per node), and a column the table cannot
represent makes :meth:`Term.mask` return None (likewise).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api.selectors import NODE_NAME_FIELD, node_selector_term_error, parse_int64
from kubesched.scheduler.framework.interface import NodeTableView

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
