"""VolumeBinding's and NodeVolumeLimits' vector Filters are exact: on random clusters of local and
zonal volumes, claims of local, provisioned and zonal classes, and CSINode limits, the mask equals
the per-node Filter's verdicts, and Reserve finds the same volumes for the chosen node either way."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kubesched.scheduler.framework.interface import CycleState
from kubesched.scheduler.plugins.nodevolumelimits import NodeVolumeLimits
from kubesched.scheduler.plugins.volumebinding import STATE_KEY, VolumeBinding
from kubesched.testkit.builders import (
    make_csinode,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
    make_storage_class,
    with_claims,
)
from kubesched.testkit.framework import FakeHandle, cache_of, pod_info

ZONE = "topology.kubernetes.io/zone"
NODES = [make_node(f"n{i}", labels={ZONE: "ab"[i % 2]}) for i in range(6)]
CLASSES = [make_storage_class("local", provisioner="kubernetes.io/no-provisioner"),
           make_storage_class("zonal", allowed_zones=["a"]), make_storage_class("any")]


@st.composite
def clusters(draw: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    volumes = []
    for i in range(draw(st.integers(0, 10))):
        kind = draw(st.sampled_from(["local", "local", "zone", "hostzone"]))
        node = f"n{draw(st.integers(0, 6))}"
        size = f"{draw(st.sampled_from([5, 10, 20]))}Gi"
        if kind == "local":
            pv = make_pv(f"pv-{i}", size, node=node)
        elif kind == "zone":
            pv = make_pv(f"pv-{i}", size, zone=draw(st.sampled_from("ab")), storage_class="local")
        else:
            pv = make_pv(f"pv-{i}", size, node=node, zone=draw(st.sampled_from("ab")))
        pv["status"] = {"phase": draw(st.sampled_from(["Available", "Available", "Bound"]))}
        volumes.append(pv)
    claims = []
    for j in range(draw(st.integers(1, 3))):
        claim = make_pvc(f"c-{j}", f"{draw(st.sampled_from([5, 10, 15]))}Gi",
                         storage_class=draw(st.sampled_from(["local", "local", "zonal", "any"])))
        claim["metadata"]["uid"] = f"uid-{j}"
        claims.append(claim)
    csinodes = [make_csinode(f"n{i}", count=draw(st.integers(0, 2))) for i in range(6) if draw(st.booleans())]
    pod = with_claims(make_pod("p"), *(c["metadata"]["name"] for c in claims))
    return volumes, claims, csinodes, pod


def _one_claim_on(volume: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[Any], dict[str, Any]]:
    """A pod with one claim of the local class and ``volume``, free, as the only volume."""
    volume["status"] = {"phase": "Available"}
    claim = make_pvc("c-0", "5Gi", storage_class="local")
    claim["metadata"]["uid"] = "uid-0"
    return [volume], [claim], [], with_claims(make_pod("p"), "c-0")


@settings(max_examples=300, deadline=None)
@given(clusters())
# a volume on n2 (zone a) that also requires a zone: its hostname alone does not make it suitable
@example(_one_claim_on(make_pv("pv-0", "10Gi", node="n2", zone="a")))
@example(_one_claim_on(make_pv("pv-0", "10Gi", node="n2", zone="b")))
def test_vector_filters_match_the_per_node_filters(cluster: Any) -> None:
    volumes, claims, csinodes, pod_obj = cluster
    cache = cache_of(NODES)
    objects = {"PersistentVolume": volumes, "PersistentVolumeClaim": claims, "StorageClass": CLASSES,
               "CSINode": csinodes}
    pod = pod_info(pod_obj)
    for plugin_class in (VolumeBinding, NodeVolumeLimits):
        plugin = plugin_class({}, FakeHandle(cache, objects=objects))
        vector_state, node_state = CycleState(), CycleState()
        _, status = plugin.pre_filter(vector_state, pod)
        plugin.pre_filter(node_state, pod)
        if status is not None:
            continue
        mask = plugin.filter_vector(vector_state, pod, cache)
        if mask is None:
            continue
        per_node = [plugin.filter(node_state, pod, info) is None for info in cache.node_infos]
        assert mask.tolist() == per_node, plugin_class.name
        if isinstance(plugin, VolumeBinding):
            for info, fits in zip(cache.node_infos, per_node):
                if fits:
                    assert plugin.reserve(vector_state, pod, info.name) is None
                    assert plugin.reserve(node_state, pod, info.name) is None
                    a, b = vector_state.read(STATE_KEY), node_state.read(STATE_KEY)
                    names = lambda vols: [(v["metadata"]["name"], c["metadata"]["name"]) for v, c in vols.static_bindings]  # noqa: E731
                    assert names(a.by_node[info.name]) == names(b.by_node[info.name])
                    assert [c["metadata"]["name"] for c in a.by_node[info.name].dynamic_provisions] == \
                        [c["metadata"]["name"] for c in b.by_node[info.name].dynamic_provisions]
                    plugin.unreserve(vector_state, pod, info.name)
                    plugin.unreserve(node_state, pod, info.name)
                    break
