"""Each node's pods as DefaultPreemption's batched dry run reads them: sorted by importance once
per node version and instant, and per preemptor priority the part that may be evicted (the pods of
lower priority, in reprieve order, with their priorities, start times and requests as arrays), kept
until the node's pods, the instant or the PodDisruptionBudgets change. Consecutive preemptors of one
priority (a Deployment's replicas) then find every node's part ready.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from itertools import chain

import numpy as np

from kubesched.scheduler.framework.budgets import DisruptionBudgets
from kubesched.scheduler.framework.candidates import importance_key
from kubesched.scheduler.framework.types import NodeInfo, PodInfo


@dataclass(slots=True)
class Split:
    """A node's lower-priority pods split by the budgets: reprieved violating first, each part most
    important first; ``positions``: where that order's pods are in the node's importance order."""

    violating: list[PodInfo]
    non_violating: list[PodInfo]
    positions: np.ndarray



class Part:
    """The pods of a node a preemptor of one priority may evict, in reprieve order (the split's
    order where a budget selects one of them, else the importance order), with ``ranks`` and
    requests as rows in that order, ``violating`` (None: no budget violated)."""

    __slots__ = ("pods", "split", "ranks", "violating", "info", "generation", "_order", "_take", "_requests")

    def __init__(self, order: NodeOrder, cut: int, split: Split | None) -> None:
        self._order = order
        #: the node and its version the part is of
        self.info, self.generation = order.info, order.generation
        self.split = split
        if split is None:
            self._take: slice | np.ndarray = slice(cut, None)
            self.pods = order.ordered[cut:]
            self.violating: np.ndarray | None = None
        else:
            self._take = split.positions
            self.pods = split.violating + split.non_violating
            self.violating = np.arange(len(self.pods)) < len(split.violating) if split.violating else None
        self.ranks = order.ranks[self._take]
        self._requests: dict[tuple[str, ...], np.ndarray] = {}

    def requests(self, names: tuple[str, ...]) -> np.ndarray:
        """The pods' requests of ``names``, a row per resource and a column per pod, contiguous
        (OverflowError past int64)."""
        found = self._requests.get(names)
        if found is None:
            found = self._requests[names] = np.ascontiguousarray(self._order.requests(names)[self._take].T)
        return found


class NodeOrder:
    """A node's pods sorted by importance (stably: filtering them keeps the order sorting the
    filtered pods gives) at one instant, their priorities negated (ascending, as importance sorts by
    priority first), their priorities, start times and requests as arrays, and what the budgets
    make of its lower-priority pods."""

    __slots__ = ("info", "generation", "now", "ordered", "negated", "ranks", "_requests",
                 "_selection", "_covers", "_last_covered", "_version", "_splits", "_parts", "_parts_key")

    def __init__(self, info: NodeInfo, now: float) -> None:
        self.info, self.generation, self.now = info, info.generation, now
        ordered = self.ordered = sorted(info.pods, key=lambda p: importance_key(p, now))
        self.negated = [-p.priority for p in ordered]
        floor = math.floor
        #: per pod: its priority and its whole-second start time (now if it has none), as float64
        #: (priorities are int32, exact there)
        self.ranks = np.fromiter(
            chain.from_iterable((p.priority, float(floor(p.start_time)) if p.start_time is not None else now)
                                for p in ordered), dtype=np.float64, count=2 * len(ordered)).reshape(len(ordered), 2)
        self._requests: dict[tuple[str, ...], np.ndarray] = {}
        self._selection: object | None = None  # the budgets' selection _covers were read under
        self._covers: list[tuple[str, ...]] = []  # per pod of ordered: the budgets selecting it
        self._last_covered = -1
        self._version = -1  # the budgets' version _splits are of
        self._splits: dict[int, Split | None] = {}
        self._parts: dict[int, Part] = {}
        self._parts_key: tuple[object, int] | None = None

    def cut(self, priority: int) -> int:
        """Where the pods of lower priority than ``priority`` start (by bisection)."""
        return bisect.bisect_right(self.negated, -priority)

    def requests(self, names: tuple[str, ...]) -> np.ndarray:
        """The pods' requests of ``names``, a row per pod (OverflowError past int64)."""
        found = self._requests.get(names)
        if found is None:
            ordered = self.ordered
            flat = np.fromiter(chain.from_iterable(tuple(p.requests.get(n, 0) for n in names) for p in ordered),
                               dtype=np.int64, count=len(ordered) * len(names))
            found = self._requests[names] = flat.reshape(len(ordered), len(names))
        return found

    def split(self, cut: int, budgets: DisruptionBudgets) -> Split | None:
        """:meth:`DisruptionBudgets.split` of the pods from ``cut`` on, with their positions in
        :attr:`ordered`; None when no budget selects any of them (their order is then the
        importance order)."""
        if self._selection is not budgets.selection:
            self._covers = [budgets.selecting(p) for p in self.ordered]
            self._last_covered = max((k for k, keys in enumerate(self._covers) if keys), default=-1)
            self._selection, self._version = budgets.selection, -1
        if self._last_covered < cut:
            return None
        if self._version != budgets.version:
            self._splits.clear()
            self._version = budgets.version
        if cut not in self._splits:
            lower = self.ordered[cut:]
            violating, non_violating = budgets.split(lower, self._covers[cut:])
            position = {id(p): cut + k for k, p in enumerate(lower)}
            self._splits[cut] = Split(violating, non_violating, np.fromiter(
                (position[id(p)] for p in chain(violating, non_violating)), dtype=np.int64, count=len(lower)))
        return self._splits[cut]



    def part(self, priority: int, budgets: DisruptionBudgets) -> Part:
        """The part a preemptor of ``priority`` may evict, kept per priority while the budgets'
        selection and version stay."""
        key = (budgets.selection, budgets.version) if budgets else None
        if self._parts_key != key:
            self._parts.clear()
            self._parts_key = key
        found = self._parts.get(priority)
        if found is None:
            cut = self.cut(priority)
            split = self.split(cut, budgets) if budgets else None
            found = self._parts[priority] = Part(self, cut, split)
        return found


class PartTable:
    """The parts of every node for one preemptor priority, budgets and instant as padded rows by
    node index: a batch of nodes gathers its pods' ranks and requests, laid end to end node by
    node, with one fancy index instead of joining a list of per-node arrays. A row is written when
    its node's part is new."""

    __slots__ = ("lengths", "ranks", "_requests", "_filled", "_width")

    def __init__(self, nodes: int) -> None:
        self._width = 4
        self.lengths = np.zeros(nodes, dtype=np.int64)
        self.ranks = np.zeros((nodes, self._width, 2), dtype=np.float64)
        self._requests: dict[tuple[str, ...], np.ndarray] = {}  # names -> (resources, nodes, width)
        self._filled: dict[tuple[str, ...], np.ndarray] = {}  # names -> whether each node's row is written

    def put(self, j: int, part: Part) -> None:
        """Node ``j``'s row is ``part``'s."""
        count = len(part.pods)
        if count > self._width:
            self._widen(count)
        self.lengths[j] = count
        self.ranks[j, :count] = part.ranks
        for filled in self._filled.values():
            filled[j] = False

    def _widen(self, count: int) -> None:
        width = max(count, 2 * self._width)
        ranks = np.zeros((len(self.lengths), width, 2), dtype=np.float64)
        ranks[:, :self._width] = self.ranks
        self.ranks = ranks
        for names, table in self._requests.items():
            wider = np.zeros((table.shape[0], table.shape[1], width), dtype=np.int64)
            wider[:, :, :self._width] = table
            self._requests[names] = wider
        self._width = width

    def gather(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For the nodes ``idx``: their pods' counts, which padded places hold a pod, and the pods'
        ranks laid end to end."""
        lengths = self.lengths[idx]
        valid = np.arange(self._width) < lengths[:, None]
        return lengths, valid, self.ranks[idx][valid]

    def requests(self, names: tuple[str, ...], idx: np.ndarray, valid: np.ndarray, parts: list[Part]) -> np.ndarray:
        """The pods' requests of ``names`` on the nodes ``idx`` (whose parts are ``parts``), a row per
        resource, the pods laid end to end (OverflowError past int64)."""
        table = self._requests.get(names)
        if table is None:
            table = self._requests[names] = np.zeros((len(names), len(self.lengths), self._width), dtype=np.int64)
            self._filled[names] = np.zeros(len(self.lengths), dtype=bool)
        filled = self._filled[names]
        for k in np.flatnonzero(~filled[idx]).tolist():
            j, part = int(idx[k]), parts[k]
            table[:, j, :len(part.pods)] = part.requests(names)
            filled[j] = True
        return table[:, idx][:, valid]
