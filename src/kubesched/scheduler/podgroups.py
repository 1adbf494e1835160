"""The nodes' pods in groups, with how many of each group every node holds (the node table's pod
groups, :meth:`NodeTable.pod_groups <kubesched.scheduler.nodetable.NodeTable.pod_groups>`).

Pods alike to any label selector (same namespace, labels, being deleted or not) form one group, and
so do pods whose pod (anti-)affinity is written alike. A selector, or an incoming pod against a
group's terms, is then matched once per group rather than once per pod: PodTopologySpread and
InterPodAffinity count matching pods per node and sum them per topology value with ``np.bincount``.
Each group's nodes are kept as arrays, patched where nodes changed rather than rebuilt.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from kubesched.api.selectors import LabelSelector
from kubesched.scheduler.framework.types import NodeInfo, PodInfo


def _nodes_as_arrays(where: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """A group's nodes (ascending) and how many of its pods each holds."""
    nodes = np.fromiter(where.keys(), dtype=np.int64, count=len(where))
    held = np.fromiter(where.values(), dtype=np.int64, count=len(where))
    order = np.argsort(nodes)
    return nodes[order], held[order]


def _with(array: np.ndarray, at: int, value: int) -> np.ndarray:
    """``np.insert(array, at, value)`` for one value, without its general-case overhead."""
    out = np.empty(len(array) + 1, dtype=array.dtype)
    out[:at] = array[:at]
    out[at] = value
    out[at + 1:] = array[at:]
    return out


def _without(array: np.ndarray, at: int) -> np.ndarray:
    """``np.delete(array, at)`` for one position."""
    out = np.empty(len(array) - 1, dtype=array.dtype)
    out[:at] = array[:at]
    out[at:] = array[at + 1:]
    return out


def _patched(arrays: tuple[np.ndarray, np.ndarray], changes: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """``arrays`` (nodes ascending, counts) with some nodes' counts changed (0: none left); new
    arrays, as earlier ones may still be in use."""
    nodes, held = arrays
    if len(changes) == 1:  # the usual case: one cycle placed or removed a pod on one node
        [(node, count)] = changes.items()
        at = int(np.searchsorted(nodes, node))
        if at < len(nodes) and nodes[at] == node:
            if count == 0:
                return _without(nodes, at), _without(held, at)
            held = held.copy()
            held[at] = count
            return nodes, held
        if count == 0:
            return nodes, held
        return _with(nodes, at, node), _with(held, at, count)
    idx = np.fromiter(changes.keys(), dtype=np.int64, count=len(changes))
    cnt = np.fromiter(changes.values(), dtype=np.int64, count=len(changes))
    order = np.argsort(idx)
    idx, cnt = idx[order], cnt[order]
    pos = np.searchsorted(nodes, idx)
    present = pos < len(nodes)
    present[present] = nodes[pos[present]] == idx[present]
    held = held.copy()
    held[pos[present]] = cnt[present]
    added = ~present & (cnt > 0)
    if added.any():
        nodes = np.insert(nodes, pos[added], idx[added])
        held = np.insert(held, pos[added], cnt[added])
    if (cnt[present] == 0).any():
        kept = held != 0
        nodes, held = nodes[kept], held[kept]
    return nodes, held


#: a group's arrays are patched for up to this many changed nodes, rebuilt beyond
_PATCH_LIMIT = 64


class _Grouping:
    """Pods grouped by a key, with how many of each group every node holds (kept per node change)."""

    __slots__ = ("key", "first", "nodes", "_per_node", "_arrays", "_changes")

    def __init__(self, n: int) -> None:
        self.key: dict[Any, int] = {}
        self.first: list[PodInfo] = []  # per group: the pod that opened it (its representative)
        self.nodes: list[dict[int, int]] = []  # per group: node index -> pods of the group there
        self._per_node: list[dict[int, int]] = [{} for _ in range(n)]  # per node: group -> pods
        self._arrays: list[tuple[np.ndarray, np.ndarray] | None] = []  # per group: nodes as arrays
        self._changes: list[dict[int, int]] = []  # per group: node -> count changed since its arrays

    def group(self, key: Any, pod: PodInfo) -> int:
        g = self.key.get(key)
        if g is None:
            g = self.key[key] = len(self.first)
            self.first.append(pod)
            self.nodes.append({})
            self._arrays.append(None)
            self._changes.append({})
        return g

    def set_node(self, index: int, now: dict[int, int]) -> None:
        before = self._per_node[index]
        if now == before:
            return
        for g in before.keys() - now.keys():
            del self.nodes[g][index]
            self._changed(g, index, 0)
        for g, count in now.items():
            if before.get(g) != count:
                self.nodes[g][index] = count
                self._changed(g, index, count)
        self._per_node[index] = now

    def _changed(self, g: int, index: int, count: int) -> None:
        if self._arrays[g] is None:
            return
        changes = self._changes[g]
        changes[index] = count
        if len(changes) > _PATCH_LIMIT:
            self._arrays[g] = None
            changes.clear()

    def arrays(self, g: int) -> tuple[np.ndarray, np.ndarray]:
        """The nodes holding pods of group ``g`` (ascending) and how many each: built once, then
        patched where nodes changed (a cycle usually changes one node)."""
        arrays = self._arrays[g]
        if arrays is None:
            arrays = self._arrays[g] = _nodes_as_arrays(self.nodes[g])
        elif self._changes[g]:
            arrays = self._arrays[g] = _patched(arrays, self._changes[g])
            self._changes[g].clear()
        return arrays


def affinity_key(pod: PodInfo) -> Any:
    """Pods whose pod (anti-)affinity is written alike (and who share a namespace, which terms
    without namespaces default to) behave alike towards any incoming pod."""
    key = pod.cache.get(_AFFINITY_KEY)
    if key is None:
        affinity = pod.spec.get("affinity") or {}
        key = pod.cache[_AFFINITY_KEY] = (
            pod.namespace, repr(affinity.get("podAffinity")), repr(affinity.get("podAntiAffinity")))
    return key


def labels_key(pod: PodInfo) -> Any:
    """Pods with the same namespace and labels (and both being deleted or not) are alike to any
    label selector and to any pod (anti-)affinity term."""
    key = pod.cache.get(_LABELS_KEY)
    if key is None:
        key = pod.cache[_LABELS_KEY] = (pod.namespace, tuple(sorted(pod.labels.items())), pod.deleting)
    return key


_AFFINITY_KEY = "podgroups/affinity-key"
_LABELS_KEY = "podgroups/labels-key"


class PodGroups:
    """The nodes' pods grouped by (namespace, labels, being deleted), and the pods with pod
    (anti-)affinity grouped by their terms: for each group, how many of its pods each node holds. A
    label selector (or an incoming pod against a group's terms) is then matched once per group
    rather than once per pod (pod topology spreading and inter-pod affinity count matching pods per
    node and domain)."""

    __slots__ = ("n", "_by_labels", "_by_affinity", "_matches")

    def __init__(self, infos: list[NodeInfo]) -> None:
        self.n = len(infos)
        self._by_labels = _Grouping(self.n)
        self._by_affinity = _Grouping(self.n)
        self._matches: dict[tuple[str, LabelSelector], tuple[int, list[int]]] = {}
        for i, info in enumerate(infos):
            self.set_node(i, info.pods)

    def _group(self, pod: PodInfo) -> int:
        """The group of pods alike to ``pod``; its first pod stands for all of them."""
        return self._by_labels.group(labels_key(pod), pod)

    def set_node(self, index: int, pods: list[PodInfo]) -> None:
        """Record that node ``index`` now holds ``pods``."""
        by_labels: dict[int, int] = {}
        by_terms: dict[int, int] = {}
        for pod in pods:
            g = self._group(pod)
            by_labels[g] = by_labels.get(g, 0) + 1
            if pod.has_affinity:
                t = self._by_affinity.group(affinity_key(pod), pod)
                by_terms[t] = by_terms.get(t, 0) + 1
        self._by_labels.set_node(index, by_labels)
        self._by_affinity.set_node(index, by_terms)

    def count(self, namespace: str, selector: LabelSelector) -> np.ndarray:
        """Per node: its pods of ``namespace`` (not being deleted) whose labels ``selector`` matches."""
        where, held = self.matching_nodes(namespace, selector)
        # a node may hold pods of several matching groups: summed (pod counts are exact in float64)
        summed: np.ndarray = np.rint(np.bincount(where, weights=held, minlength=self.n)).astype(np.int64)
        return summed

    def matching_nodes(self, namespace: str, selector: LabelSelector) -> tuple[np.ndarray, np.ndarray]:
        """The nodes holding pods of ``namespace`` (not being deleted) that ``selector`` matches, and
        how many each (a node appears once per group of such pods it holds)."""
        grouping = self._by_labels
        parts = [grouping.arrays(g) for g in self._matching(namespace, selector) if grouping.nodes[g]]
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        if len(parts) == 1:
            return parts[0]
        return np.concatenate([w for w, _ in parts]), np.concatenate([c for _, c in parts])

    def _matching(self, namespace: str, selector: LabelSelector) -> list[int]:
        """The groups of ``namespace``, not being deleted, whose labels ``selector`` matches: kept
        per (namespace, selector), extended as groups are added (a group's labels never change)."""
        groups = self._by_labels.first
        seen, found = self._matches.get((namespace, selector), (0, []))
        if seen < len(groups):
            found = found + [g for g in range(seen, len(groups))
                             if (pod := groups[g]).namespace == namespace and not pod.deleting
                             and selector.matches(pod.labels)]
            self._matches[(namespace, selector)] = (len(groups), found)
        return found

    def label_groups(self) -> Iterator[tuple[str, dict[str, str], np.ndarray, np.ndarray]]:
        """Every group of pods on some node, pods being deleted included: namespace, labels, the
        nodes holding them and how many each."""
        grouping = self._by_labels
        for g, pod in enumerate(grouping.first):
            if grouping.nodes[g]:
                where, counts = grouping.arrays(g)
                yield pod.namespace, pod.labels, where, counts

    def affinity_groups(self) -> Iterator[tuple[PodInfo, np.ndarray, np.ndarray]]:
        """The pods with pod (anti-)affinity, by their terms: a pod of the group (whose parsed
        terms stand for all of them), the nodes holding them and how many each."""
        grouping = self._by_affinity
        for g, pod in enumerate(grouping.first):
            if grouping.nodes[g]:
                where, counts = grouping.arrays(g)
                yield pod, where, counts
