"""Differential test: the default profile's ``filter_all`` on nodes holding nominated pods (the
arithmetic form of the two-pass rule, used when only NodeResourcesFit depends on the node's pods)
equals upstream's ``RunFilterPluginsWithNominatedPods`` run node by node, statuses included."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler.config import build_profile
from kubesched.scheduler.framework.interface import CycleState
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.queue import Nominator
from kubesched.testkit.builders import make_node, make_pod, make_taint
from kubesched.testkit.framework import FakeHandle, cache_of

NAMES = [f"n{i}" for i in range(5)]


node_st = st.tuples(st.integers(1, 8), st.integers(1, 16), st.sampled_from([None, "NoSchedule", "PreferNoSchedule"]),
                    st.booleans(), st.integers(1, 6))
resources_st = st.tuples(st.integers(0, 4000), st.integers(0, 4096))
nominated_st = st.tuples(st.integers(0, len(NAMES) - 1), resources_st, st.integers(-5, 5))
existing_st = st.tuples(st.integers(0, len(NAMES) - 1), resources_st)


def pod(name: str, resources: tuple[int, int], *, priority: int = 0, node: str | None = None,
        **spec: Any) -> PodInfo:
    cpu, mem = resources
    obj = make_pod(name, f"{cpu}m", f"{mem}Mi", uid=f"uid-{name}", node=node, **spec)
    obj["spec"]["priority"] = priority
    return PodInfo.from_pod(obj)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(nodes=st.lists(node_st, min_size=1, max_size=len(NAMES)), existing=st.lists(existing_st, max_size=8),
       nominated=st.lists(nominated_st, max_size=6), incoming=resources_st, tolerate=st.booleans(),
       ports=st.booleans())
def test_filter_all_with_nominated_pods_equals_the_two_pass_rule(nodes, existing, nominated, incoming, tolerate,
                                                                 ports) -> None:
    node_objs = [make_node(NAMES[i], cpu=str(cpu), memory=f"{mem}Gi", pods=slots,
                           taints=[make_taint("k", "v", taint)] if taint else None, unschedulable=cordoned)
                 for i, (cpu, mem, taint, cordoned, slots) in enumerate(nodes)]
    pods = [make_pod(f"e{j}", f"{cpu}m", f"{mem}Mi", uid=f"uid-e{j}", node=NAMES[at % len(nodes)])
            for j, (at, (cpu, mem)) in enumerate(existing)]
    cache = cache_of(node_objs, pods)
    nominator = Nominator(lambda _pod: True)
    for j, (at, resources, priority) in enumerate(nominated):
        nominator.add(pod(f"nom{j}", resources, priority=priority), NAMES[at % len(nodes)])
    handle = FakeHandle(cache)
    profile = build_profile({"schedulerName": "default-scheduler"}, 0, lambda _name: handle)
    fwk = Framework(profile, nominator)
    handle.framework = fwk
    spec: dict[str, Any] = {}
    if tolerate:
        spec["tolerations"] = [{"operator": "Exists"}]
    incoming_pod = pod("x", incoming, **spec)
    if ports:  # a host port: NodePorts depends on the node's pods too, so the per-node rule applies
        incoming_pod = PodInfo.from_pod({**incoming_pod.obj, "spec": {**incoming_pod.spec, "containers": [
            {**incoming_pod.spec["containers"][0], "ports": [{"containerPort": 80, "hostPort": 8080}]}]}})
    state = CycleState()
    _, pre = fwk.run_pre_filter(state, incoming_pod)
    assert pre is None
    alive, first_fail, known = fwk.filter_all(state, incoming_pod, cache)
    expected = [fwk.run_filter_with_nominated(state, incoming_pod, info) for info in cache.node_infos]
    assert alive.tolist() == [status is None for status in expected]
    failing = np.flatnonzero(~alive).tolist()
    got = fwk.statuses_for(state, incoming_pod, cache, failing, first_fail, known)
    want = [expected[j] for j in failing]
    assert [(s.code, s.reasons, s.plugin) for s in got] == [(s.code, s.reasons, s.plugin) for s in want]  # type: ignore[union-attr]
