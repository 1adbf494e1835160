"""The nominated pods as column sums (what NodeResourcesFit adds to each node for a pod's filters)
equal summing, node by node, the pods the nominator says that pod's filters count — through adds,
re-nominations, deletions, nodes appearing (the node table laid out anew), pods nominated to nodes
the table does not have, and a journal too short to follow (the sums start again)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler.cache import Cache
from kubesched.scheduler.framework.nominated import NominatedSums
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.queue import Nominator
from kubesched.testkit.builders import make_node, make_pod

NODES = ["n0", "n1", "n2", "n3"]  # n3 joins the cluster during the run


def pod(i: int, priority: int, cpu: int) -> PodInfo:
    obj = make_pod(f"p{i}", f"{cpu}00m", f"{cpu}Gi", uid=f"uid-{i}")
    obj["spec"]["priority"] = priority
    return PodInfo.from_pod(obj)


op_st = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 6), st.integers(0, 3), st.integers(-2, 2), st.integers(1, 4)),
    st.tuples(st.just("delete"), st.integers(0, 6), st.just(0), st.just(0), st.just(1)),
    st.tuples(st.just("look"), st.integers(0, 7), st.just(0), st.integers(-2, 2), st.just(1)),
    st.tuples(st.just("node"), st.just(0), st.just(3), st.just(0), st.just(1)),
)


@pytest.mark.parametrize("journal", [2, 8192])
@settings(max_examples=150, deadline=None, derandomize=True)
@given(ops=st.lists(op_st, max_size=30))
def test_column_sums_equal_the_nominated_pods_counted(journal: int, ops: list) -> None:
    nominator = Nominator(lambda _pod: True, journal)
    cache = Cache()
    for name in NODES[:3]:
        cache.add_node(make_node(name))
    cache.update_snapshot()
    sums = NominatedSums(nominator)
    for what, i, node, priority, cpu in ops:
        if what == "add":
            nominator.add(pod(i, priority, cpu), NODES[node])
        elif what == "delete":
            nominator.delete(pod(i, 0, 1))
        elif what == "node" and cache.get(NODES[3]) is None:
            cache.add_node(make_node(NODES[3]))
            cache.update_snapshot()
        else:
            incoming = pod(i, priority, 1)
            load = sums.load(incoming, cache)
            to_add = nominator.nominated_to_add(incoming)
            for info in cache.node_infos:
                counted = to_add.get(info.name, ())
                at = info.index
                assert load.count[at] == len(counted)
                for resource in ("cpu", "memory", "pods"):
                    assert load.requested(resource)[at] == sum(p.requests.get(resource, 0) for p in counted)
