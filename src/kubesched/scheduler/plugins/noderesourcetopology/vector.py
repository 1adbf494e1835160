"""NodeResourceTopologyMatch over many nodes at once: nodes whose topology views look alike answer
alike.

Filter and Score read a node's view only through its Topology Manager policy, scope and maximum
NUMA nodes and, per zone in order, its id, its available amounts and its distances; Filter also
reads which of the pod's requested resources the node's ``status.allocatable`` names. So each
node's view is given a small integer, its *code*, equal for two nodes exactly when those readings
are equal (the view's :func:`signature`), and each answer is worked out once per code (and, for
Filter, per set of named resources), then spread over the nodes with that code.

Codes are kept per node name and follow the views: the plugin forgets a node's code whenever its
cache reports the node's view changed (new object, reservation, flush, foreign pods), and an array
of codes in the node table's order is patched for those nodes only.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np

from kubesched.scheduler.framework.views import NodeTableSnapshot
from kubesched.topology.nrt import TopologyView
from kubesched.topology.qos import PodRequest

#: a node's view and whether it may be used (the topology cache's answer)
ViewOf = Callable[[str], tuple[TopologyView | None, bool]]

_INVALID: tuple[str] = ("invalid",)
_NO_OBJECT: tuple[str] = ("none",)
#: requests naming more resources than this are not given per-node bit masks
MAX_MASK_RESOURCES = 30


def signature(view: TopologyView | None, usable: bool) -> Hashable:
    """Everything of a view that Filter and Score read (see the module's docstring)."""
    if not usable:
        return _INVALID
    if view is None:
        return _NO_OBJECT
    return (view.policy, view.scope, view.max_numa_nodes,
            tuple((z.numa_id, tuple(z.available.items()), tuple(z.costs.items())) for z in view.zones))


def request_key(request: PodRequest) -> Hashable:
    """What of a pod's request Filter and Score read: its QoS and each container's amounts in order."""
    return (request.qos, tuple(tuple(c.requests.items()) for c in request.init_containers),
            tuple(tuple(c.requests.items()) for c in request.containers))


def requested_names(request: PodRequest) -> tuple[str, ...]:
    """The resources some container asks a non-zero amount of (those Filter looks for in the
    node's allocatable), sorted."""
    return tuple(sorted({r for c in request.all_containers() for r, amount in c.requests.items() if amount != 0}))


def allocatable_mask(names: tuple[str, ...], allocatable: Mapping[str, Any]) -> int:
    """Bit k set when the node's allocatable names ``names[k]``."""
    mask = 0
    bit = 1
    for name in names:
        if name in allocatable:
            mask |= bit
        bit <<= 1
    return mask


def allocatable_masks(snapshot: NodeTableSnapshot, names: tuple[str, ...]) -> np.ndarray:
    """:func:`allocatable_mask` of every node of the snapshot (kept until a node changes)."""
    memo = snapshot.table.node_memo()
    key = ("NodeResourceTopologyMatch/allocatable", names)
    masks = memo.get(key)
    if masks is None:
        infos = snapshot.node_infos
        masks = np.fromiter((allocatable_mask(names, info.allocatable) for info in infos), dtype=np.int64,
                            count=len(infos))
        memo[key] = masks
    assert isinstance(masks, np.ndarray)
    return masks


class ViewCodes:
    """The code of each node's view (see the module's docstring)."""

    def __init__(self, view_of: ViewOf) -> None:
        self._view_of = view_of
        self._interned: dict[Hashable, int] = {}
        self._by_name: dict[str, int] = {}
        #: codes in the order of ``_table``'s nodes, valid but for the names in ``_stale``
        self._array: np.ndarray | None = None
        self._table: object = None
        self._layout = -1
        self._stale: set[str] = set()

    def __len__(self) -> int:
        """How many distinct views have been seen since the codes were last cleared."""
        return len(self._interned)

    def forget(self, name: str) -> None:
        """The node's view may have changed."""
        self._by_name.pop(name, None)
        self._stale.add(name)

    def clear(self) -> None:
        """Forget every code (new codes no longer mean what earlier ones did)."""
        self._interned.clear()
        self._by_name.clear()
        self._array = None
        self._stale.clear()

    def code(self, name: str) -> int:
        found = self._by_name.get(name)
        if found is None:
            key = signature(*self._view_of(name))
            found = self._interned.setdefault(key, len(self._interned))
            self._by_name[name] = found
        return found

    def array(self, snapshot: NodeTableSnapshot) -> np.ndarray:
        """The code of every node of the snapshot, in its order."""
        table = snapshot.table
        if self._array is None or self._table is not table or self._layout != table.layout:
            infos = snapshot.node_infos
            self._array = np.fromiter((self.code(info.name) for info in infos), dtype=np.int64, count=len(infos))
            self._table, self._layout = table, table.layout
        elif self._stale:
            for name in self._stale:
                index = table.node_index(name)
                if index is not None:
                    self._array[index] = self.code(name)
        self._stale.clear()
        return self._array
