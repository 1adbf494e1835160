"""The nominator's view of the pods a pod's filters must count on each node equals filtering every
node's nominations by priority (>= the pod's) and leaving the pod itself out, through adds,
re-nominations and deletions (its fast path skips the filtering when no lower priority is nominated)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.queue import Nominator
from kubesched.testkit.builders import make_pod

NODES = ["n0", "n1", "n2"]


def pod(i: int, priority: int) -> PodInfo:
    obj = make_pod(f"p{i}", uid=f"uid-{i}")
    obj["spec"]["priority"] = priority
    return PodInfo.from_pod(obj)


op_st = st.tuples(st.sampled_from(["add", "delete"]), st.integers(0, 5), st.integers(0, 2), st.integers(-2, 2))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(ops=st.lists(op_st, max_size=20), incoming=st.tuples(st.integers(0, 6), st.integers(-2, 2)))
def test_nominated_to_add_equals_filtering_every_node(ops, incoming) -> None:
    nominator = Nominator(lambda _pod: True)
    for what, i, node, priority in ops:
        if what == "add":
            nominator.add(pod(i, priority), NODES[node])
        else:
            nominator.delete(pod(i, priority))
    x = pod(*incoming)
    got = {node: list(pods) for node, pods in nominator.nominated_to_add(x).items() if pods}
    want = {}
    for node in nominator.nodes():
        kept = [p for p in nominator.pods_for_node(node) if p.priority >= x.priority and p.uid != x.uid]
        if kept:
            want[node] = kept
    assert {n: [p.uid for p in ps] for n, ps in got.items()} == {n: [p.uid for p in ps] for n, ps in want.items()}
