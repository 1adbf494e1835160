"""The statuses a failed scan keeps: FoundStatuses (by node index, in groups) and LazyNodeStatuses
(the per-node map made only when read) answer exactly what a plain dict of the same entries does."""

from __future__ import annotations

import copy
import json
import pickle

import numpy as np

from kubesched.scheduler.framework.found import FoundStatuses, LazyNodeStatuses, StatusGroups
from kubesched.scheduler.framework.interface import Status
from kubesched.scheduler.framework.types import NodeStatuses, reasons_histogram


def _lazy() -> tuple[LazyNodeStatuses, dict[str, Status]]:
    cpu, memory = Status.unschedulable("Insufficient cpu"), Status.unschedulable("Insufficient memory")
    names = [f"n{i}" for i in range(6)]
    shared = np.empty(2, dtype=object)
    shared[:] = [cpu, memory]
    which = np.asarray([0, 0, 1, 0, 1, 0])
    plain = dict(zip(names, shared[which].tolist()))
    lazy = LazyNodeStatuses()
    failed = np.arange(6)
    lazy.fill_later(names, failed, shared, which, [(cpu, 4), (memory, 2)],
                    lambda name: names.index(name) if name in names else -1)
    return lazy, plain


def test_the_lazy_map_reads_as_the_dict_of_its_entries() -> None:
    lazy, plain = _lazy()
    assert reasons_histogram(lazy) == ["2 Insufficient memory", "4 Insufficient cpu"]
    assert lazy.get("n2") is plain["n2"] and lazy.get("n7", 0) == 0  # answered without making the map
    assert dict.__len__(lazy) == 0
    names = [f"n{i}" for i in range(6)]
    assert lazy.matching(names, lambda st: True) is None  # not the list it was filled with
    assert "n5" in lazy and len(lazy) == 6
    for reader in (dict, lambda m: {**m}, lambda m: sorted(m.items()), lambda m: list(m), copy.copy):
        fresh, _ = _lazy()
        assert reader(fresh) == reader(plain)
    fresh, _ = _lazy()
    assert fresh == plain and not fresh != plain
    fresh, _ = _lazy()
    assert json.dumps({k: v.message() for k, v in fresh.items()}) == json.dumps({k: v.message() for k, v in plain.items()})
    fresh, _ = _lazy()
    assert {k: v.reasons for k, v in pickle.loads(pickle.dumps(fresh)).items()} == \
        {k: v.reasons for k, v in plain.items()}
    fresh, _ = _lazy()
    fresh["n9"] = Status.unschedulable("x")  # a write keeps the entries made before it
    assert len(fresh) == 7 and fresh["n0"].reasons == ("Insufficient cpu",)
    assert isinstance(fresh, NodeStatuses)


def test_found_statuses_follow_the_latest_write() -> None:
    a, b, c = (Status.unschedulable(r) for r in "abc")
    found = FoundStatuses()
    found[3] = a
    found.put_many(np.asarray([5, 3, 7]), [b, c], np.asarray([0, 1, 0]))
    assert found.get(3) is c and found.get(5) is b and found.get(7) is b and found.get(4) is None
    found[7] = a
    assert found.as_dict() == {5: b, 3: c, 7: a}
    gid, have, distinct = found.lookup(np.asarray([7, 4, 5, 3]))
    assert have.tolist() == [True, False, True, True]
    assert [distinct[g] for g in gid[have].tolist()] == [a, b, c]
    other = FoundStatuses()
    other.put_many(np.asarray([5]), [a], np.asarray([0]))
    found.update(other)
    assert found.as_dict() == {5: a, 3: c, 7: a}
    found.pop(3)
    assert found.get(3) is None and set(found.as_dict()) == {5, 7}


def test_groups_per_node() -> None:
    a = Status.unschedulable("a")
    groups = StatusGroups([None, a], np.asarray([1, 0, 1]))
    assert groups.per_node() == [a, None, a] and groups.failing().tolist() == [True, False, True]
