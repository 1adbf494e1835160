"""The one fit check (``plugins/fit.py``, upstream ``noderesources.Fits``) and NodeResourcesFit's
preemption arithmetic held against its Filter on real NodeInfos."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler.cache import Cache
from kubesched.scheduler.framework.interface import CycleState
from kubesched.scheduler.framework.nominated import NominatedSums
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.plugins.fit import InsufficientResource, fit_requests, fits
from kubesched.scheduler.plugins.noderesources import NodeResourcesFit
from kubesched.scheduler.queue import Nominator
from kubesched.testkit.builders import make_node, make_pod

GPU = "example.com/gpu"


def test_fits_lists_the_pod_count_then_each_checked_resource_in_order() -> None:
    """``fitsRequest``: "Too many pods" first, then each insufficient resource with what was
    requested, what is used and the capacity."""
    short = fits([("cpu", 3000), ("memory", 1), (GPU, 2)], allocatable={"cpu": 4000, "memory": 10, GPU: 1},
                 requested={"cpu": 2000, "memory": 9}, pods=3, allowed_pods=3)
    assert short == [
        InsufficientResource("pods", "Too many pods", 1, 3, 3),
        InsufficientResource("cpu", "Insufficient cpu", 3000, 2000, 4000),
        InsufficientResource(GPU, f"Insufficient {GPU}", 2, 0, 1),
    ]
    assert fits([("cpu", 2000)], allocatable={"cpu": 4000}, requested={"cpu": 2000}, pods=50,
                allowed_pods=None) == []


def test_fit_requests_are_native_then_non_zero_scalars_not_ignored() -> None:
    """``computePodResourceRequest`` + ``fitsRequest``: cpu, memory, ephemeral-storage when
    requested; scalar names only (an unprefixed unknown name is not tracked); ignored extended
    resources are skipped; the pod count is not a request."""
    requests = {GPU: 1, "memory": 5, "cpu": 0, "hugepages-2Mi": 2, "vendor.io/other": 0, "foo": 3, "pods": 1}
    assert fit_requests(requests) == [("memory", 5), (GPU, 1), ("hugepages-2Mi", 2)]
    assert fit_requests(requests, lambda r: r == GPU) == [("memory", 5), ("hugepages-2Mi", 2)]


pod_st = st.tuples(st.sampled_from([0, 100, 500]), st.integers(1, 3))  # priority, cpu


@settings(max_examples=60, deadline=None, derandomize=True)
@given(on_node=st.lists(st.lists(pod_st, max_size=5), min_size=1, max_size=4),
       nominated=st.lists(st.tuples(st.integers(0, 3), pod_st), max_size=3),
       incoming=pod_st, order=st.randoms(use_true_random=False))
def test_preemption_arithmetic_agrees_with_filter(on_node, nominated, incoming, order) -> None:
    """``preemption_view`` judges as Filter does on a NodeInfo holding the same pods, whatever pods
    are removed and added back; ``preemption_failures`` marks a node only where the view, with every
    lower-priority pod gone and the nominated pods added, still fails — and marks every such node
    that has lower-priority pods."""
    cache = Cache()
    for i in range(len(on_node)):
        cache.add_node(make_node(f"n{i}", cpu="4", pods=4))
    for i, pods in enumerate(on_node):
        for j, (priority, cpu) in enumerate(pods):
            obj = make_pod(f"p{i}-{j}", str(cpu), "1Gi", node=f"n{i}")
            obj["metadata"]["uid"] = f"u{i}-{j}"
            obj["spec"]["priority"] = priority
            cache.add_pod(PodInfo.from_pod(obj))
    cache.update_snapshot()
    priority, cpu = incoming
    incoming_obj = make_pod("x", str(cpu), "1Gi")
    incoming_obj["spec"]["priority"] = priority
    pod = PodInfo.from_pod(incoming_obj)
    fit = NodeResourcesFit({}, object())  # type: ignore[arg-type]
    state = CycleState()
    fit.pre_filter(state, pod)
    nodes = cache.node_infos
    extra: dict[int, list[PodInfo]] = {}  # the nominated pods the incoming pod's filters count
    nominator = Nominator(lambda _: True)
    for i, (n, (p, c)) in enumerate(nominated):
        k = n % len(nodes)
        obj = make_pod(f"nom{i}", str(c), "1Gi", uid=f"nom{i}")
        obj["spec"]["priority"] = p
        nominator.add(PodInfo.from_pod(obj), nodes[k].name)
        if p >= pod.priority:
            extra.setdefault(k, []).append(PodInfo.from_pod(obj))
    indices = np.asarray([node.index for node in nodes], dtype=np.int64)
    failures = fit.preemption_failures(state, pod, cache, indices, NominatedSums(nominator).load(pod, cache))
    for k, node in enumerate(nodes):
        view, clone = fit.preemption_view(state, pod, node), node.clone()
        moved = list(node.pods)
        order.shuffle(moved)
        for victim in moved:
            view.remove_pod(victim)
            clone.remove_pod(victim)
            assert (view.filter() is None) == (fit.filter(state, pod, clone) is None)
        for victim in moved[: len(moved) // 2]:
            view.add_pod(victim)
            clone.add_pod(victim)
            got, want = view.filter(), fit.filter(state, pod, clone)
            assert (got.reasons if got else None) == (want.reasons if want else None)
        lower = [p for p in node.pods if p.priority < pod.priority]
        after = fit.preemption_view(state, pod, node)
        for victim in lower:
            after.remove_pod(victim)
        for other in extra.get(k, []):
            after.add_pod(other)
        assert bool(failures[k]) == (bool(lower) and after.filter() is not None)
