"""The cluster page's documents at any size: the nodes grouped by pool and, within a pool, by zone,
summed on the server, so that a 5000-node cluster is a few pools in the first answer and not 5000
rows; and the nodes themselves a page at a time, those of one pool (and zone) or those a search finds
by name or label, sorted by name.

A :class:`ClusterView` is worked out once from a finished run (``UiState`` makes one per run, again
after an edit): each node as the result's ``nodes`` entry (the numbers of ``kubesched simulate -o
json``) with its pool, zone, taints, readiness, pressure conditions, shares and extended resources;
each pool and zone with the sums of its nodes' allocation, how many nodes are tainted, cordoned, not
Ready or under pressure, and the pending pods that name its nodes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.analysis.grouping import POOL_LABELS, pool_by_name, pool_of
from kubesched.api.quantity import format_quantity, readable_share, resource_amount
from kubesched.api.selectors import pod_matches_node_selector_and_affinity, required_node_affinity

#: the node's label that names its zone
ZONE_LABEL = "topology.kubernetes.io/zone"
#: the resources every node has, summed per pool as the result writes them per node
RESOURCES = ("cpu", "memory")
#: the pending pods a pool's or a zone's summary names (the rest are counted)
PENDING_NAMED = 10
#: the most nodes one request returns
MAX_PAGE = 1000
#: how a page of nodes may be sorted: by name, or by the share of cpu, memory or pods requested
#: (the fullest first; a node with nothing allocatable last), ties by name
NODE_SORTS = ("name", "cpu", "memory", "pods")


def _share(requested: int, allocatable: int) -> float | None:
    """Requested over allocatable, None where nothing is allocatable."""
    return requested / allocatable if allocatable else None


def _shown(amounts: Mapping[str, tuple[int, int]]) -> dict[str, str]:
    """Each resource's requested / allocatable as a person reads them (``9.9Ti / 60Ti``, ``9662 /
    15360 cores``): what the pages print, worked out here once for the pages and the script alike."""
    return {resource: readable_share(resource, requested, allocatable)
            for resource, (requested, allocatable) in amounts.items()}


@dataclass
class _Node:
    """One node as the view keeps it: the row the API returns, and what grouping and searching read."""

    row: dict[str, Any]
    obj: Mapping[str, Any]
    #: resource -> (requested, allocatable) as the scheduler counts them (milli-cpu, bytes, units)
    amounts: dict[str, tuple[int, int]]
    #: the node's name and each label as ``key=value``, lower case, one a line: what a search reads
    text: str

    @property
    def name(self) -> str:
        return str(self.row["node"])


def _node(entry: dict[str, Any], obj: Mapping[str, Any], pool: str,
          extended: Mapping[str, tuple[int, int]]) -> _Node:
    """The node's row: the result's ``nodes`` entry with its pool, zone, taints, readiness at the
    end, the pressure conditions that are True, its shares and its extended resources."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    conditions = status.get("conditions") or []
    ready = next((c.get("status") for c in conditions if c.get("type") == "Ready"), None)
    amounts = {r: (resource_amount(r, entry[r]["requested"]), resource_amount(r, entry[r]["allocatable"]))
               for r in RESOURCES}
    amounts.update(extended)
    row = {**entry, "pool": pool, "zone": labels.get(ZONE_LABEL, ""),
           "taints": [f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}"
                      for t in spec.get("taints") or []],
           "unschedulable": bool(spec.get("unschedulable")),
           "ready": ready != "False",
           # the conditions that are bad news when True (MemoryPressure, DiskPressure, ...)
           "conditions": [c["type"] for c in conditions if c.get("type") != "Ready" and c.get("status") == "True"],
           **{f"{r}Share": _share(*amounts[r]) for r in RESOURCES},
           "podsShare": _share(entry["pods"], entry.get("allocatablePods") or 0),
           "extended": {r: {"requested": format_quantity(r, req), "allocatable": format_quantity(r, alloc)}
                        for r, (req, alloc) in extended.items()},
           "shown": _shown(amounts)}
    text = "\n".join([entry["node"], *(f"{k}={v}" for k, v in labels.items())]).lower()
    return _Node(row, obj, amounts, text)


@dataclass(frozen=True)
class _Pending:
    """Pending pods that name nodes the same way: their ``spec.nodeName``, ``nodeSelector`` and
    required node affinity (pods of one workload share them, so each way is checked once per group)."""

    pod: Mapping[str, Any]
    keys: list[str] = field(default_factory=list)

    def names(self, node: _Node) -> bool:
        node_name = (self.pod.get("spec") or {}).get("nodeName")
        if node_name and node_name != node.name:
            return False
        return pod_matches_node_selector_and_affinity(self.pod, node.obj)


def _names_nodes(pod: Mapping[str, Any]) -> bool:
    """Whether the pod names nodes at all: a node, a node selector or a required node affinity."""
    spec = pod.get("spec") or {}
    return bool(spec.get("nodeName") or spec.get("nodeSelector") or
                (required_node_affinity(pod) or {}).get("nodeSelectorTerms"))


def _pending_ways(pods: Iterable[tuple[str, Mapping[str, Any] | None]]) -> list[_Pending]:
    """The pending pods that name nodes, by the way they name them (in the order of ``pods``)."""
    ways: dict[str, _Pending] = {}
    for key, pod in pods:
        if pod is None or not _names_nodes(pod):
            continue
        spec = pod.get("spec") or {}
        way = json.dumps([spec.get("nodeName"), spec.get("nodeSelector"), required_node_affinity(pod)],
                         sort_keys=True, default=str)
        ways.setdefault(way, _Pending(pod)).keys.append(key)
    return list(ways.values())


def _totals(nodes: list[_Node], pending: list[_Pending]) -> dict[str, Any]:
    """A group of nodes' count; each resource's requested and allocatable summed and their share;
    how many nodes are tainted, cordoned, not Ready, under pressure; the pending pods that name any
    of the nodes (counted, the first few named)."""
    out: dict[str, Any] = {"count": len(nodes), "pods": sum(n.row["pods"] for n in nodes),
                           "allocatablePods": sum(n.row.get("allocatablePods") or 0 for n in nodes)}
    out["podsShare"] = _share(out["pods"], out["allocatablePods"])
    sums: dict[str, list[int]] = {}
    for node in nodes:
        for resource, (requested, allocatable) in node.amounts.items():
            both = sums.setdefault(resource, [0, 0])
            both[0] += requested
            both[1] += allocatable
    for resource in RESOURCES:
        requested, allocatable = sums.get(resource, (0, 0))
        out[resource] = {"requested": format_quantity(resource, requested),
                         "allocatable": format_quantity(resource, allocatable)}
        out[f"{resource}Share"] = _share(requested, allocatable)
    out["extended"] = {r: {"requested": format_quantity(r, req), "allocatable": format_quantity(r, alloc),
                           "share": _share(req, alloc)}
                       for r, (req, alloc) in sorted(sums.items()) if r not in RESOURCES}
    out["shown"] = _shown({r: (both[0], both[1]) for r, both in sums.items()} | {
        r: (0, 0) for r in RESOURCES if r not in sums})
    out["tainted"] = sum(1 for n in nodes if n.row["taints"])
    out["cordoned"] = sum(1 for n in nodes if n.row["unschedulable"])
    out["notReady"] = sum(1 for n in nodes if not n.row["ready"])
    out["pressure"] = sum(1 for n in nodes if n.row["conditions"])
    named = sorted(key for way in pending if any(way.names(n) for n in nodes) for key in way.keys)
    out["pendingNaming"] = len(named)
    out["pendingNamed"] = named[:PENDING_NAMED]
    return out


@dataclass
class ClusterView:
    #: every node, sorted by name (the result's order)
    nodes_by_name: list[_Node]
    #: the first answer: the run's summary, the pools with their zones, the pending pods
    summary: dict[str, Any]
    #: node -> (pod, phase) of the pods on it at the end of the run (those deleted are not)
    pods_on: dict[str, list[tuple[str, str]]]
    by_name: dict[str, _Node] = field(init=False)

    def __post_init__(self) -> None:
        self.by_name = {n.name: n for n in self.nodes_by_name}

    @classmethod
    def of(cls, outcome: Any) -> ClusterView:
        """The view of a finished run (a ``SimulationOutcome``)."""
        result, cluster = outcome.result, outcome.simulation.cluster
        objects = {n["metadata"]["name"]: n for n in cluster.list("Node")}
        extended = outcome.extended_resources()
        labelled: dict[str, str | None] = {}
        nodes = []
        for entry in result["nodes"]:
            obj = objects.get(entry["node"]) or {"metadata": {}, "spec": {}, "status": {}}
            found = pool_of((obj["metadata"].get("labels") or {}), POOL_LABELS)
            pool = found[1] if found else pool_by_name(entry["node"])
            labelled.setdefault(pool, found[0] if found else None)
            nodes.append(_node(entry, obj, pool, extended.get(entry["node"], {})))
        pending = sorted(key for key, pod in result["pods"].items() if pod["phase"] == "Pending" and not pod["node"])
        ways = _pending_ways((key, cluster.get("Pod", *key.split("/", 1))) for key in pending)
        pods_on: dict[str, list[tuple[str, str]]] = {}
        for key, pod in result["pods"].items():
            if pod["node"] and pod["phase"] != "Deleted":
                pods_on.setdefault(pod["node"], []).append((key, pod["phase"]))
        summary = {"scenario": result["scenario"], "seed": result["seed"], "endTime": result["endTime"],
                   "summary": result["summary"], "nodes": len(nodes),
                   "pools": [_pool(pool, labelled[pool], members, ways)
                             for pool, members in sorted(_grouped(nodes, "pool").items())],
                   "pending": pending}
        return cls(nodes, summary, pods_on)

    def nodes(self, *, pool: str | None = None, zone: str | None = None, find: str = "", offset: int = 0,
              limit: int = 50, sort: str = "name") -> dict[str, Any]:
        """A page of the nodes of ``pool`` and ``zone`` (None: any; zone "": the nodes without a zone
        label) whose name or one of whose labels (``key=value``) contains ``find`` (any case), with
        how many there are in all; sorted by name or by a share requested (:data:`NODE_SORTS`)."""
        if sort not in NODE_SORTS:
            raise ValueError(f"sort {sort!r}: expected one of {', '.join(NODE_SORTS)}")
        wanted = find.strip().lower()
        found = [n for n in self.nodes_by_name
                 if (pool is None or n.row["pool"] == pool) and (zone is None or n.row["zone"] == zone)
                 and (not wanted or wanted in n.text)]
        if sort != "name":  # stable: equal shares keep the order by name
            found.sort(key=lambda n: 1.0 if n.row[f"{sort}Share"] is None else -n.row[f"{sort}Share"])
        return {"total": len(found), "offset": offset, "limit": limit, "sort": sort,
                "nodes": [n.row for n in found[offset:offset + limit]]}

    def node(self, name: str) -> dict[str, Any]:
        """One node: its row, its labels and the pods on it at the end of the run (KeyError: none such)."""
        node = self.by_name.get(name)
        if node is None:
            raise KeyError(f"no node {name} in the cluster")
        labels = (node.obj.get("metadata") or {}).get("labels") or {}
        return {**node.row, "labels": dict(labels),
                "podsOn": [{"pod": key, "phase": phase} for key, phase in sorted(self.pods_on.get(name, ()))]}


def _grouped(nodes: list[_Node], key: str) -> dict[str, list[_Node]]:
    groups: dict[str, list[_Node]] = {}
    for node in nodes:
        groups.setdefault(node.row[key], []).append(node)
    return groups


def _pool(pool: str, label: str | None, nodes: list[_Node], pending: list[_Pending]) -> dict[str, Any]:
    """A pool's summary: its totals, and each zone's."""
    return {"pool": pool, "label": label, **_totals(nodes, pending),
            "zones": [{"zone": zone, **_totals(members, pending)}
                      for zone, members in sorted(_grouped(nodes, "zone").items())]}
