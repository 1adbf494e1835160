"""PodTopologySpread over the node table: matching pods counted per node from the table's pod
groups, then summed per topology domain with ``np.bincount`` over the topology key's label column.

Every function here mirrors a per-node loop of the plugin (:mod:`.plugin`) exactly (same eligible
nodes, same domains, same dict order where it matters) and returns None when the table cannot
answer (a label column it cannot represent, a snapshot without a table); the caller then runs the
per-node loop.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from kubesched.scheduler.framework.interface import MAX_NODE_SCORE
from kubesched.scheduler.framework.types import NodeInfo, PodInfo
from kubesched.scheduler.framework.views import (
    ABSENT_LABEL,
    LabelColumnView,
    NodeTableSnapshot,
    NodeTableView,
)
from kubesched.scheduler.plugins.helpers import table_of
from kubesched.scheduler.plugins.nodeaffinity.vector import pod_required, required_mask
from kubesched.scheduler.plugins.podtopologyspread.constraints import HONOR, Constraint, NodeInclusion

_INDEX = operator.attrgetter("index")


def columns_of(table: NodeTableView, constraints: Sequence[Constraint]) -> list[LabelColumnView] | None:
    out = []
    for c in constraints:
        column = table.label_column(c.topology_key)
        if column is None:
            return None
        out.append(column)
    return out


def present(table: NodeTableView, key: str, column: LabelColumnView) -> np.ndarray:
    """Which nodes have label ``key`` (``column`` is its column), kept in the node memo until a
    node changes: read only."""
    memo = table.node_memo()
    mask = memo.get(("PodTopologySpread/present", key))
    if mask is None:
        mask = memo["PodTopologySpread/present", key] = column.codes != ABSENT_LABEL
    return mask  # type: ignore[no-any-return]


def _counted(table: NodeTableView, keys: tuple[str, ...], columns: Sequence[LabelColumnView]
             ) -> tuple[np.ndarray, list[bool]]:
    """PreFilter's nodes that can count for constraints on ``keys``: those with their Node object
    and every key; and per key whether that is every node with the key (then the domains are the
    column's values in first-seen order). Kept in the node memo: read only."""
    memo = table.node_memo()
    hit = memo.get(("PodTopologySpread/counted", keys))
    if hit is None:
        base = table.has_object & has_all_keys(table, columns)
        every = [bool(np.array_equal(base, present(table, key, column))) for key, column in zip(keys, columns)]
        hit = memo["PodTopologySpread/counted", keys] = (base, every)
    return hit  # type: ignore[no-any-return]


def has_all_keys(table: NodeTableView, columns: Sequence[LabelColumnView], where: np.ndarray | None = None,
                 ) -> np.ndarray:
    """Whether each node (of ``where`` if given) has every column's key."""
    mask = np.ones(table.n if where is None else len(where), dtype=bool)
    for column in columns:
        mask &= (column.codes if where is None else column.codes[where]) != ABSENT_LABEL
    return mask


def matching_per_node(table: NodeTableView, c: Constraint, namespace: str) -> np.ndarray:
    """``count_pods_matching(node.pods, c.selector, namespace)`` for every node."""
    if c.selector.is_empty:
        return np.zeros(table.n, dtype=np.int64)
    return table.pod_groups().count(namespace, c.selector)


def _affinity_mask(table: NodeTableView, nodes: list[NodeInfo], pod: PodInfo, inclusion: NodeInclusion,
                   candidates: np.ndarray) -> np.ndarray:
    compiled = pod_required(pod)
    if isinstance(compiled, tuple):
        matching = required_mask(table, compiled)
        if matching is not None:
            return matching
    mask = np.zeros(table.n, dtype=bool)
    for i in np.flatnonzero(candidates).tolist():
        mask[i] = inclusion.affinity_ok(nodes[i])
    return mask


def inclusion_mask(table: NodeTableView, nodes: list[NodeInfo], c: Constraint, inclusion: NodeInclusion,
                   candidates: np.ndarray) -> np.ndarray:
    """``candidates`` narrowed to the nodes ``inclusion.matches(c, node)`` accepts (``candidates``
    itself when nothing narrows it: read only)."""
    mask = candidates
    if c.node_affinity_policy == HONOR and not inclusion.trivial_affinity:
        mask = mask & _affinity_mask(table, nodes, inclusion.pod, inclusion, candidates)
    if c.node_taints_policy == HONOR and table.flags().any_hard_taints:
        mask = mask.copy()
        for i in np.flatnonzero(mask & table.has_hard_taints).tolist():
            mask[i] = inclusion.taints_ok(nodes[i])
    return mask


def pre_filter_counts(snapshot: NodeTableSnapshot, constraints: Sequence[Constraint],
                      inclusion: NodeInclusion, namespace: str) -> list[dict[str, int]] | None:
    """PreFilter's per-constraint counts (topology value -> matching pods), values in the order
    the per-node loop first meets them."""
    table = table_of(snapshot)
    if table is None:
        return None
    columns = columns_of(table, constraints)
    if columns is None:
        return None
    nodes = snapshot.node_infos
    base, every = _counted(table, tuple(c.topology_key for c in constraints), columns)
    out: list[dict[str, int]] = []
    for c, column, every_with_key in zip(constraints, columns, every):
        eligible = inclusion_mask(table, nodes, c, inclusion, base)
        if c.selector.is_empty:
            sums = np.zeros(len(column.values), dtype=np.int64)
        else:  # over the nodes holding matching pods only
            where, held = table.pod_groups().matching_nodes(namespace, c.selector)
            ok = eligible[where]
            sums = _sum_by_code(column.codes[where[ok]], held[ok], len(column.values))
        if eligible is base and every_with_key:
            ordered = column.first_seen()  # every node with the key counts (the usual case)
        else:
            found, first = np.unique(column.codes[eligible], return_index=True)
            ordered = found[np.argsort(first, kind="stable")].tolist()
        values = column.values
        out.append({values[code]: int(sums[code]) for code in ordered})
    return out


def _sum_by_code(codes: np.ndarray, counts: np.ndarray, size: int) -> np.ndarray:
    """``sums[k]`` = the sum of ``counts`` where ``codes`` is k (pod counts: exact in float64)."""
    sums: np.ndarray = np.rint(np.bincount(codes, weights=counts, minlength=size)).astype(np.int64)
    return sums


def pre_score_counts(snapshot: NodeTableSnapshot, constraints: Sequence[Constraint], inclusion: NodeInclusion,
                     namespace: str, feasible: list[NodeInfo], require_all: bool, hostname: str,
                     columns_of_feasible: np.ndarray | None = None,
                     ) -> tuple[set[str], list[dict[str, int]], list[float]] | None:
    """PreScore's ignored nodes, per-constraint counts and weights. ``columns_of_feasible``: the
    feasible nodes' columns when the framework gave them (else they are looked up and checked)."""
    table = table_of(snapshot)
    if table is None:
        return None
    columns = columns_of(table, constraints)
    if columns is None:
        return None
    nodes = snapshot.node_infos
    if columns_of_feasible is not None:
        idx = columns_of_feasible
    else:
        positions = list(map(_INDEX, feasible))
        if max(positions, default=-1) >= len(nodes) or not all(
                map(operator.is_, map(nodes.__getitem__, positions), feasible)):
            return None  # not the snapshot's NodeInfos
        idx = np.array(positions, dtype=np.int64)

    def keys_at(where: np.ndarray) -> np.ndarray:
        """Whether nodes ``where`` count: they have every topology key, or ``require_all`` is off."""
        return has_all_keys(table, columns, where) if require_all else np.ones(len(where), dtype=bool)

    at_feasible = keys_at(idx)
    kept = idx[at_feasible]
    ignored = {nodes[i].name for i in idx[~at_feasible].tolist()}
    counts: list[dict[str, int]] = []
    weights: list[float] = []
    for c, column in zip(constraints, columns):
        if c.topology_key == hostname:
            counts.append({})
            weights.append(math.log(len(feasible) - len(ignored) + 2))
            continue
        codes, size = column.codes_or_empty()
        domain = np.zeros(size, dtype=bool)
        domain[codes[kept]] = True
        weights.append(math.log(int(domain.sum()) + 2))
        if c.selector.is_empty:
            sums = np.zeros(size, dtype=np.int64)
        elif (c.node_affinity_policy != HONOR or inclusion.trivial_affinity) and c.node_taints_policy != HONOR:
            # every node with the keys counts: sum over the nodes holding matching pods only
            where, held = table.pod_groups().matching_nodes(namespace, c.selector)
            ok = keys_at(where) & domain[codes[where]]
            sums = _sum_by_code(codes[where][ok], held[ok], size)
        else:
            base = has_all_keys(table, columns) if require_all else np.ones(table.n, dtype=bool)
            eligible = inclusion_mask(table, nodes, c, inclusion, base & domain[codes])
            sums = _sum_by_code(codes[eligible], matching_per_node(table, c, namespace)[eligible], size)
        values = column.values
        counts.append({(values[k] if k < len(values) else ""): int(sums[k]) for k in np.flatnonzero(domain).tolist()})
    return ignored, counts, weights


def domain_counts(column: LabelColumnView, counts: dict[str, int], idx: np.ndarray | None = None) -> np.ndarray:
    """Per node (of ``idx`` if given): ``counts.get(value, 0)`` for the node's value of the column's
    key (0 where absent)."""
    per_code = np.zeros(len(column.values) + 1, dtype=np.int64)  # the last slot stands for "absent"
    for value, num in counts.items():
        code = column.code.get(value)
        if code is not None:
            per_code[code] = num
    codes = column.codes if idx is None else column.codes[idx]
    result: np.ndarray = per_code[codes]  # ABSENT_LABEL (-1) reads the last slot
    return result


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Go ``math.Round`` for non-negative values, elementwise."""
    r = np.floor(x)
    out: np.ndarray = np.where(x - r >= 0.5, r + 1, r).astype(np.int64)
    return out


#: per constraint, over every node (or the nodes asked about): (the node has the topology key, the
#: skew there exceeds maxSkew)
Skew = tuple[np.ndarray, np.ndarray]


def skews(table: NodeTableView, constraints: Sequence[Constraint], counts: Sequence[dict[str, int]],
          min_matches: Sequence[int], pod_labels: dict[str, str], where: np.ndarray | None = None,
          ) -> list[Skew] | None:
    """Filter's two tests of each constraint on every node (of ``where`` if given), from
    PreFilter's counts."""
    columns = columns_of(table, constraints)
    if columns is None:
        return None
    out = []
    for c, column, per_value, min_match in zip(constraints, columns, counts, min_matches):
        self_match = 1 if c.selector.matches(pod_labels) else 0
        skew = domain_counts(column, per_value, where) + (self_match - min_match)
        has_key = present(table, c.topology_key, column)
        out.append((has_key if where is None else has_key[where], skew > c.max_skew))
    return out


def first_failure(per_constraint: Sequence[Skew], idx: np.ndarray) -> np.ndarray:
    """For nodes ``idx`` (known to fail): 0 where the first failing constraint finds the topology
    key missing, 1 where it finds the skew too large."""
    reason = np.full(len(idx), -1, dtype=np.int64)
    for present, too_skewed in per_constraint:
        reason[(reason < 0) & ~present[idx]] = 0
        reason[(reason < 0) & too_skewed[idx]] = 1
    return reason


def spread_scores(table: NodeTableView, constraints: Sequence[Constraint], counts: Sequence[dict[str, int]],
                  weights: Sequence[float], namespace: str, idx: np.ndarray, hostname: str) -> np.ndarray | None:
    """Score of nodes ``idx`` (ignored nodes left to the caller), summed in the per-node order."""
    columns = columns_of(table, constraints)
    if columns is None:
        return None
    total = np.zeros(len(idx), dtype=np.float64)
    for c, column, per_value, weight in zip(constraints, columns, counts, weights):
        has_key = present(table, c.topology_key, column)[idx]
        if c.topology_key == hostname:
            cnt = matching_per_node(table, c, namespace)[idx]
        else:
            cnt = domain_counts(column, per_value, idx)
        total = np.where(has_key, total + (cnt.astype(np.float64) * weight + float(c.max_skew - 1)), total)
    return round_half_away(total)


def normalize(scores: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    """NormalizeScore: the lowest valid score gets the most; invalid (ignored) nodes get 0."""
    valid = np.ones(len(scores), dtype=bool) if valid is None else valid
    out = np.zeros(len(scores), dtype=np.int64)
    if not valid.any():
        return out
    lo = int(scores[valid].min())
    hi = max(0, int(scores[valid].max()))
    out[valid] = MAX_NODE_SCORE if hi == 0 else MAX_NODE_SCORE * (hi + lo - scores[valid]) // hi
    return out
