"""TaintToleration judges nodes with alike taints once (the node table codes each distinct list of
taints): its vector Filter and Score equal the per-node ones on nodes with taints of several keys,
values, effects and orders, for pods with assorted tolerations, also after nodes' taints change."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kubesched.scheduler.framework.interface import CycleState
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.plugins.tainttoleration import TaintToleration
from kubesched.testkit.builders import make_node, make_pod
from kubesched.testkit.framework import cache_of

taint_st = st.fixed_dictionaries({
    "key": st.sampled_from(["a", "b"]), "value": st.sampled_from(["x", "y"]),
    "effect": st.sampled_from(["NoSchedule", "NoSchedule", "PreferNoSchedule", "NoExecute"]),
})
taints_st = st.lists(taint_st, max_size=3)
toleration_st = st.fixed_dictionaries({"key": st.sampled_from(["a", "b", ""])}, optional={
    "operator": st.sampled_from(["Equal", "Exists"]), "value": st.sampled_from(["x", "y"]),
    "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute", ""]),
}).filter(lambda t: t["key"] or t.get("operator") == "Exists")


A_X = {"key": "a", "value": "x", "effect": "NoSchedule"}
A_Y = {"key": "a", "value": "y", "effect": "NoSchedule"}


@settings(max_examples=150, deadline=None, derandomize=True)
@example(nodes=[[A_X], [A_Y]], tolerations=[{"key": "a", "operator": "Equal", "value": "x"}], changes=[])
@example(nodes=[[A_X], []], tolerations=[], changes=[(1, [A_Y]), (0, [])])
@given(nodes=st.lists(taints_st, min_size=1, max_size=8), tolerations=st.lists(toleration_st, max_size=3),
       changes=st.lists(st.tuples(st.integers(0, 7), taints_st), max_size=3))
def test_vector_filter_and_score_equal_per_node(nodes: list, tolerations: list, changes: list) -> None:
    cache = cache_of([make_node(f"n{i}", taints=taints or None) for i, taints in enumerate(nodes)])
    plugin = TaintToleration({}, object())  # type: ignore[arg-type]
    pod = PodInfo.from_pod(make_pod("x", tolerations=tolerations))
    state = CycleState()

    def check() -> None:
        infos = cache.node_infos
        mask = plugin.filter_vector(state, pod, cache)
        assert mask is not None
        assert mask.tolist() == [plugin.filter(state, pod, n) is None for n in infos]
        idx = np.arange(len(infos), dtype=np.int64)
        assert plugin.score_vector(state, pod, cache, idx).tolist() == [plugin.score(state, pod, n) for n in infos]

    check()
    for at, taints in changes:
        cache.update_node(make_node(f"n{at % len(nodes)}", taints=taints or None))
        cache.update_snapshot()
        check()
