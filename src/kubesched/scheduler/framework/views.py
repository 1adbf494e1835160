"""Read-only views the framework hands to plugins through the Handle: the cycle's snapshot
(upstream ``SharedLister``, ``pkg/scheduler/framework/listers.go``), its node table (the node axis as
NumPy arrays, with label columns, pod groups and node flags, read by the vector capabilities) and the
nominator's read side (upstream ``PodNominator``).

They are protocols the scheduler's cache, node table and queue implement. A view of what the
scheduler knows belongs here; what plugins and the framework do with it (statuses, extension
points, capabilities) does not, so that this module needs nothing of the framework but its types.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from kubesched.api.selectors import LabelSelector
    from kubesched.scheduler.framework.types import NodeInfo, PodInfo


# -- the snapshot and its node table --------------------------------------------------------------
class SnapshotView(Protocol):
    """The nodes of the current cycle (upstream ``SharedLister``)."""

    @property
    def node_infos(self) -> list[NodeInfo]:
        """All nodes, in scheduling (node-tree) order."""

    @property
    def have_pods_with_affinity(self) -> list[NodeInfo]: ...

    @property
    def have_pods_with_required_anti_affinity(self) -> list[NodeInfo]: ...

    def get(self, node_name: str) -> NodeInfo | None: ...

    def node_changes(self, since: int | None) -> tuple[int, list[str] | None]:
        """A mark to pass next time and the names of the nodes whose NodeInfo changed (added,
        removed, its object or pods) since ``since`` (a mark this method gave), or None for the
        names when that cannot be told (a snapshot may always answer None)."""

    def is_pvc_used(self, key: str) -> bool:
        """Whether a pod on a node of the snapshot uses the claim ``namespace/name``."""

    def image_num_nodes(self, image: str) -> int:
        """On how many nodes ``image`` is present."""


#: the code of a node label column where the node lacks the key
ABSENT_LABEL = -1


class LabelColumnView(Protocol):
    """One node label key over the node axis: ``codes[i]`` is the code of node i's value,
    :data:`ABSENT_LABEL` where node i lacks the key; ``code`` maps each value to its code."""

    @property
    def codes(self) -> np.ndarray: ...

    @property
    def code(self) -> Mapping[str, int]: ...

    @property
    def values(self) -> list[str]:
        """Indexed by code: the label value."""

    def as_int64(self) -> tuple[np.ndarray, np.ndarray]:
        """Indexed by code: the value as a base-10 int64 and whether it parses as one."""

    def first_seen(self) -> list[int]:
        """The codes the nodes have, in the order of the first node having each."""

    def codes_or_empty(self) -> tuple[np.ndarray, int]:
        """The node codes with a missing key read as the value "", and how many codes there are."""


class PodGroupsView(Protocol):
    """The nodes' pods grouped by (namespace, labels, being deleted), and the pods with pod
    (anti-)affinity grouped by their terms."""

    def count(self, namespace: str, selector: LabelSelector) -> np.ndarray:
        """Per node: how many of its pods of ``namespace`` (not being deleted) have labels that
        ``selector`` matches."""

    def matching_nodes(self, namespace: str, selector: LabelSelector) -> tuple[np.ndarray, np.ndarray]:
        """The nodes holding pods of ``namespace`` (not being deleted) that ``selector`` matches and
        how many each; a node may appear more than once (sum them)."""

    def label_groups(self) -> Iterator[tuple[str, dict[str, str], np.ndarray, np.ndarray]]:
        """Every (namespace, labels) group on some node, pods being deleted included: namespace,
        labels, the node indices holding them and how many each."""

    def affinity_groups(self) -> Iterator[tuple[PodInfo, np.ndarray, np.ndarray]]:
        """Pods with pod (anti-)affinity grouped by their terms (and namespace): one of them, the
        node indices holding them and how many each."""


@dataclass(frozen=True, slots=True)
class NodeFlags:
    """Facts about all the table's nodes at once."""

    all_have_objects: bool  # every node's Node object is known
    any_hard_taints: bool  # some node has a NoSchedule or NoExecute taint
    any_prefer_taints: bool  # some node has a PreferNoSchedule taint


class NodeTableView(Protocol):
    """The node axis as arrays: one column per node in snapshot order (``NodeInfo.index``), one row
    per resource (``row[name]``). Read by the vector capabilities only."""

    @property
    def n(self) -> int: ...

    @property
    def row(self) -> dict[str, int]: ...

    @property
    def alloc(self) -> np.ndarray: ...

    @property
    def requested(self) -> np.ndarray: ...

    @property
    def nonzero(self) -> np.ndarray:
        """Rows cpu and memory as counted for scoring (defaults for pods requesting nothing)."""

    @property
    def pod_count(self) -> np.ndarray: ...

    @property
    def allowed_pods(self) -> np.ndarray: ...

    @property
    def unschedulable(self) -> np.ndarray: ...

    @property
    def has_hard_taints(self) -> np.ndarray: ...

    @property
    def has_prefer_taints(self) -> np.ndarray: ...

    @property
    def taint_codes(self) -> np.ndarray:
        """Per node, the code of its taints: nodes whose taints have the same keys, values and
        effects in the same order share it; 0 is no taints."""

    @property
    def taint_lists(self) -> list[Any]:
        """Indexed by code: the taints of a node with that code."""

    @property
    def has_ports(self) -> np.ndarray:
        """Whether the node's pods use any host port."""

    @property
    def nameless(self) -> list[int]:
        """The nodes whose object has no name."""

    @property
    def has_object(self) -> np.ndarray:
        """Whether the node's Node object is known (a NodeInfo may exist for pods alone)."""

    @property
    def layout(self) -> int:
        """Changes whenever the columns are laid out anew (nodes added, removed or reordered)."""

    def node_array(self) -> np.ndarray:
        """The NodeInfos in column order, as an object array."""

    def pod_groups(self) -> PodGroupsView:
        """The nodes' pods by (namespace, labels), kept until the table is rebuilt."""

    def label_column(self, key: str) -> LabelColumnView | None:
        """The column of node label ``key``; None when some node's value cannot be represented
        (then ask per node)."""

    def node_index(self, name: str) -> int | None:
        """The column of the node called ``name``."""

    def flags(self) -> NodeFlags:
        """What holds of all the nodes at once."""

    def node_memo(self) -> dict[Any, Any]:
        """Answers worked out from the nodes' objects alone (labels, names, taints), kept until a
        node changes: key them by what asked and what was asked."""

    def ensure_resource(self, name: str) -> int:
        """The row of ``name``, added (zero everywhere) if missing; take arrays only after it."""

    def below_priority(self, priority: int) -> tuple[np.ndarray, np.ndarray]:
        """(requested per resource, pod count) of each node's pods with a lower priority."""


class NodeTableSnapshot(SnapshotView, Protocol):
    """The snapshot with its node table, as the vector capabilities receive it."""

    @property
    def table(self) -> NodeTableView: ...


# -- the nominator ---------------------------------------------------------------------------------
class NominatorView(Protocol):
    """Pods nominated to nodes (upstream ``PodNominator``, the read side)."""

    def pods_for_node(self, node: str) -> list[PodInfo]: ...

    def nodes(self) -> Iterable[str]: ...

    def nominated_to_add(self, pod: PodInfo) -> Mapping[str, Sequence[PodInfo]]:
        """For every node with nominations, the nominated pods ``pod``'s filters must count
        (priority >= its own, itself left out), in nomination order; possibly empty (read only)."""

    def nominated_node(self, uid: str) -> str | None: ...

    def has_any(self) -> bool: ...

    def changes(self, since: int | None) -> tuple[int, Sequence[tuple[int, str, PodInfo]] | None]:
        """A mark to pass next time and the changes after ``since`` (a mark this method gave):
        ``(+1, node, pod)`` nominated, ``(-1, node, pod)`` no longer; None for the changes when
        they cannot be told (start again from :meth:`nominated`)."""

    def nominated(self) -> Iterable[tuple[str, PodInfo]]:
        """Every (node, pod) nomination now."""
