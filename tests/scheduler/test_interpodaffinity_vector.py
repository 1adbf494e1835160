"""Differential test: InterPodAffinity's vector Filter (and its failure statuses) equals the per-node
Filter on generated clusters: zones and hostnames (some nodes without the zone label), pods with
labels in two namespaces, incoming pods with required affinity and anti-affinity terms, existing pods
with required anti-affinity, and pods added or removed through the PreFilter extensions (preemption's
and nominated pods' path)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler.framework.interface import CycleState
from kubesched.scheduler.framework.types import PodInfo
from kubesched.scheduler.plugins.interpodaffinity import InterPodAffinity
from kubesched.testkit.builders import make_node, make_pod
from kubesched.testkit.framework import FakeHandle, cache_of

ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
APPS = ("a", "b", "c")


def _term(app: str, key: str, namespaces: list[str] | None) -> dict:
    term: dict = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    if namespaces is not None:
        term["namespaces"] = namespaces
    return term


term_st = st.tuples(st.sampled_from(APPS), st.sampled_from((ZONE, HOST, "rack")),
                    st.sampled_from((None, ["default"], ["default", "other"])))
pod_st = st.tuples(st.sampled_from(APPS), st.sampled_from(("default", "other")),
                   st.lists(term_st, max_size=1))  # an existing pod's anti-affinity terms


def _pod(name: str, app: str, ns: str, node: str | None = None, anti: list | None = None,
         affinity: list | None = None) -> dict:
    pod = make_pod(name, cpu="10m", memory=None, namespace=ns, labels={"app": app}, uid=f"u-{name}", node=node)
    spec_affinity: dict = {}
    if anti:
        spec_affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(*t) for t in anti]}
    if affinity:
        spec_affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(*t) for t in affinity]}
    if spec_affinity:
        pod["spec"]["affinity"] = spec_affinity
    return pod


@settings(max_examples=150, deadline=None, derandomize=True)
@given(zones=st.lists(st.sampled_from(("z1", "z2", None)), min_size=1, max_size=6),
       pods=st.lists(st.tuples(st.integers(0, 5), pod_st), max_size=10),
       incoming_app=st.sampled_from(APPS), anti=st.lists(term_st, max_size=2), affinity=st.lists(term_st, max_size=2),
       change=st.sampled_from(("none", "add", "remove")))
def test_the_vector_filter_equals_the_per_node_filter(zones, pods, incoming_app, anti, affinity, change) -> None:
    nodes = [make_node(f"n{i}", labels={ZONE: z} if z else {}) for i, z in enumerate(zones)]
    existing = [_pod(f"p{j}", app, ns, node=f"n{i % len(zones)}", anti=terms)
                for j, (i, (app, ns, terms)) in enumerate(pods)]
    cache = cache_of(nodes, existing)
    plugin = InterPodAffinity({}, FakeHandle(cache))  # type: ignore[arg-type]
    pod = PodInfo.from_pod(_pod("x", incoming_app, "default", anti=anti, affinity=affinity))
    state = CycleState()
    _, status = plugin.pre_filter(state, pod)
    if status is not None:  # skipped: nothing to filter
        return
    infos = cache.node_infos
    if change == "add":
        plugin.add_pod(state, pod, PodInfo.from_pod(_pod("y", incoming_app, "default", node=infos[0].name)), infos[0])
    elif change == "remove" and infos[-1].pods:
        plugin.remove_pod(state, pod, infos[-1].pods[0], infos[-1])
    mask = plugin.filter_vector(state, pod, cache)
    assert mask is not None
    expected = [plugin.filter(state, pod, n) for n in infos]
    assert list(mask) == [s is None for s in expected]
    failing = np.flatnonzero(~mask)
    statuses = plugin.failure_statuses(state, pod, cache, failing)
    assert [(s.code, s.reasons) for s in statuses] == [(expected[j].code, expected[j].reasons) for j in failing]
