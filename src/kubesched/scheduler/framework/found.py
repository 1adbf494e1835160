"""The statuses a filtering pass found, by node index.

A vector filter rejects thousands of nodes for a handful of distinct reasons: :class:`StatusGroups`
holds such verdicts as one Status object per distinct verdict and, per node, which one it is.
:class:`FoundStatuses` gathers what a pass over the nodes found: single statuses (a per-node
plugin's, a node judged with the two-pass rule node by node) and groups (the nominated pods' verdicts
of an arithmetic filter on every node that has some), so that nodes failing alike are never looked
at one by one in Python.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from kubesched.scheduler.framework.interface import Status
from kubesched.scheduler.framework.types import NodeStatuses


class StatusGroups:
    """Per node of some list, one of a few shared Status objects (or None where it passed):
    ``groups`` the distinct ones, ``which[k]`` the index of node k's."""

    __slots__ = ("groups", "which")

    def __init__(self, groups: list[Status | None], which: np.ndarray) -> None:
        self.groups = groups
        self.which = which

    def per_node(self) -> list[Status | None]:
        """The Status of each node, in order."""
        shared = np.empty(len(self.groups), dtype=object)
        shared[:] = self.groups
        out: list[Status | None] = shared[self.which].tolist()
        return out

    def failing(self) -> np.ndarray:
        """Whether each node's entry is a Status (not None)."""
        rejected = np.fromiter((g is not None for g in self.groups), dtype=bool, count=len(self.groups))
        return rejected[self.which] if len(self.which) else np.zeros(0, dtype=bool)


class FoundStatuses:
    """Statuses by node index: single ones, and chunks of nodes given together (:meth:`put_many`).
    A node's latest write counts."""

    __slots__ = ("single", "_chunks")

    def __init__(self) -> None:
        self.single: dict[int, Status] = {}
        #: (node indices sorted, per node the index of its Status in the third, the distinct
        #: statuses as an object array: perhaps some no node holds any more)
        self._chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def __bool__(self) -> bool:
        return bool(self.single) or any(len(idx) for idx, _, _ in self._chunks)

    def __setitem__(self, j: int, status: Status) -> None:
        if self._chunks:
            self._drop_from_chunks(np.asarray([j], dtype=np.int64))
        self.single[j] = status

    def pop(self, j: int) -> None:
        self.single.pop(j, None)
        if self._chunks:
            self._drop_from_chunks(np.asarray([j], dtype=np.int64))

    def put_many(self, idx: np.ndarray, groups: list[Status | None], which: np.ndarray) -> None:
        """Node ``idx[k]`` has ``groups[which[k]]`` (never a None entry), for every k at once."""
        if not len(idx):
            return
        if self.single:
            self._drop_singles(idx)
        self._drop_from_chunks(idx)
        shared = np.empty(len(groups), dtype=object)
        shared[:] = groups
        order = np.argsort(idx, kind="stable")
        self._chunks.append((idx[order], which[order], shared))

    def update(self, other: FoundStatuses) -> None:
        """Take ``other``'s entries (over this one's for the same nodes)."""
        for idx, which, shared in other._chunks:
            self._drop_from_chunks(idx)
            if self.single:
                self._drop_singles(idx)
            self._chunks.append((idx, which, shared))
        if other.single:
            self._drop_from_chunks(np.fromiter(other.single, dtype=np.int64, count=len(other.single)))
            self.single.update(other.single)

    def get(self, j: int) -> Status | None:
        found = self.single.get(j)
        if found is not None:
            return found
        for idx, which, shared in self._chunks:
            at = int(np.searchsorted(idx, j))
            if at < len(idx) and int(idx[at]) == j:
                status: Status = shared[which[at]]
                return status
        return None

    def as_dict(self) -> dict[int, Status]:
        """Every entry, by node index (for inspection: a dict of every node held)."""
        out: dict[int, Status] = {}
        for idx, which, shared in self._chunks:
            out.update(zip(idx.tolist(), shared[which].tolist()))
        out.update(self.single)
        return out

    def distinct(self) -> Iterator[Status]:
        """Every Status held, each shared object at least once (and perhaps some a node held
        before it was written again)."""
        yield from self.single.values()
        for _, _, shared in self._chunks:
            yield from (status for status in shared.tolist() if status is not None)

    def lookup(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[Status]]:
        """For the nodes ``indices``: the index of each one's Status in the list returned third
        (-1: none held)."""
        count = len(indices)
        gid = np.full(count, -1, dtype=np.int64)
        distinct: list[Status] = []
        for idx, which, shared in self._chunks:
            at = np.minimum(np.searchsorted(idx, indices), len(idx) - 1)
            hit = idx[at] == indices
            gid[hit] = which[at[hit]] + len(distinct)
            distinct.extend(shared.tolist())
        if self.single:
            keys = np.fromiter(self.single, dtype=np.int64, count=len(self.single))
            for pos in np.flatnonzero(np.isin(indices, keys)).tolist():
                gid[pos] = len(distinct)
                distinct.append(self.single[int(indices[pos])])
        return gid, gid >= 0, distinct

    def _drop_singles(self, idx: np.ndarray) -> None:
        held = np.fromiter(self.single, dtype=np.int64, count=len(self.single))
        for j in np.intersect1d(idx, held).tolist():
            del self.single[j]

    def _drop_from_chunks(self, idx: np.ndarray) -> None:
        if not self._chunks:
            return
        kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for held, which, shared in self._chunks:
            stays = ~np.isin(held, idx)
            if stays.all():
                kept.append((held, which, shared))
            elif stays.any():
                kept.append((held[stays], which[stays], shared))
        self._chunks = kept


class LazyNodeStatuses(NodeStatuses):
    """A :class:`NodeStatuses` whose entries for a whole scan's failed nodes are made only when
    something reads the map itself: a failed cycle without explanations asks only how many nodes
    failed alike (:meth:`alike`, known from the groups) and one node's status, not thousands of
    entries. Every read and write of the map makes them first."""

    __slots__ = ("_later", "_entry_of")

    def __init__(self) -> None:
        super().__init__()
        #: (node names by index, the failed nodes' indices, the distinct statuses, per failed node
        #: the index of its own, the index of a node name or -1), while the entries are not made
        self._later: tuple[list[str], np.ndarray, np.ndarray, np.ndarray, Callable[[str], int]] | None = None
        self._entry_of: np.ndarray | None = None

    def fill_later(self, names: list[str], failed: np.ndarray, shared: np.ndarray, which: np.ndarray,
                   alike: list[tuple[Status, int]], index_of: Callable[[str], int]) -> None:
        """The nodes ``failed`` (indices into ``names``), each with ``shared[which[k]]``, added when
        first read; ``alike`` their counts; ``index_of(name)``: a node's index (-1: none), to answer
        :meth:`get` without making every entry. Only on an empty map."""
        assert not self and self._later is None
        self._later = (names, failed, shared, which, index_of)
        self._alike = alike

    def _settle(self) -> None:
        later = self._later
        if later is not None:
            self._later = self._entry_of = None
            names, failed, shared, which, _ = later
            dict.update(self, zip(map(names.__getitem__, failed.tolist()), shared[which].tolist()))

    def matching(self, names: list[str], test: Callable[[Status], bool]) -> np.ndarray | None:
        """Per node of ``names`` (the very list the scan named nodes by) whether it has a Status
        passing ``test`` (asked once per distinct Status), while the entries are not made; None
        otherwise."""
        later = self._later
        if later is None or later[0] is not names:
            return None
        _, failed, shared, which, _ = later
        passing = np.fromiter((test(st) for st in shared.tolist()), dtype=bool, count=len(shared))
        out = np.zeros(len(names), dtype=bool)
        out[failed] = passing[which]
        return out

    def fill(self, names: list[str], statuses: list[Status], alike: list[tuple[Status, int]] | None) -> None:
        self._settle()
        super().fill(names, statuses, alike)

    def alike(self) -> list[tuple[Status, int]]:
        if self._later is None:
            return super().alike()
        return self._alike

    def __getitem__(self, key: str) -> Status:
        self._settle()
        return dict.__getitem__(self, key)

    def __setitem__(self, key: str, value: Status) -> None:
        self._settle()
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        self._settle()
        dict.__delitem__(self, key)

    def __contains__(self, key: object) -> bool:
        self._settle()
        return dict.__contains__(self, key)

    def __iter__(self) -> Iterator[str]:
        self._settle()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._settle()
        return dict.__len__(self)

    def __eq__(self, other: object) -> bool:
        self._settle()
        if isinstance(other, LazyNodeStatuses):
            other._settle()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        self._settle()
        return dict.__repr__(self)

    def get(self, key: str, default: Any = None) -> Any:
        later = self._later
        if later is None:
            return dict.get(self, key, default)
        names, failed, shared, which, index_of = later
        j = index_of(key)
        if j < 0:
            return default
        if self._entry_of is None:  # per node index, its place among the failed (-1: none)
            self._entry_of = np.full(len(names), -1, dtype=np.int64)
            self._entry_of[failed] = np.arange(len(failed), dtype=np.int64)
        at = int(self._entry_of[j])
        return shared[which[at]] if at >= 0 else default

    def keys(self) -> Any:
        self._settle()
        return dict.keys(self)

    def values(self) -> Any:
        self._settle()
        return dict.values(self)

    def items(self) -> Any:
        self._settle()
        return dict.items(self)

    def pop(self, *args: Any) -> Any:
        self._settle()
        return dict.pop(self, *args)

    def popitem(self) -> tuple[str, Status]:
        self._settle()
        return dict.popitem(self)

    def setdefault(self, key: str, default: Any = None) -> Any:
        self._settle()
        return dict.setdefault(self, key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._settle()
        dict.update(self, *args, **kwargs)

    def copy(self) -> dict[str, Status]:
        self._settle()
        return dict(dict.items(self))

    def clear(self) -> None:
        self._later = self._entry_of = None
        dict.clear(self)

    def __reduce__(self) -> tuple[type, tuple[dict[str, Status]]]:
        """Copied or pickled as the plain map of its entries."""
        self._settle()
        return NodeStatuses, (dict(dict.items(self)),)
