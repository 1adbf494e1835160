"""Ping-pong avoidance (examples/eviction/ping-pong*.yaml; design doc, end of the eviction section)."""

from __future__ import annotations

import numpy as np
import yaml

from kubesched.api.cluster_settings.eviction import PingPongSettings
from kubesched.cluster.embedded.cluster import EmbeddedCluster
from kubesched.cluster.embedded.eventlog import EventLog
from kubesched.cluster.embedded.kubelet.pingpong import PingPongAvoidance, with_avoided_nodes
from kubesched.des.clock import EventLoop
from kubesched.testkit.builders import make_container, make_pod
from kubesched.testkit.runs import run_path
from kubesched.testkit.scenarios import write_scenario

from .conftest import EXAMPLES


def web_placements(run) -> list[tuple[float, str, str]]:
    return [(e["time"], e["reason"], e.get("node") or "") for e in run.events
            if e["pod"].startswith("default/web-") and e["reason"] in ("Scheduled", "Evicted")]


def test_without_avoidance_the_replacement_goes_back_to_the_same_node():
    run = run_path(EXAMPLES / "eviction" / "ping-pong.yaml")
    assert web_placements(run) == [
        (0.0, "Scheduled", "node-1"),
        (30.0, "Evicted", "node-1"),     # web (200) and cache (2000) both over request: web goes
        (30.0, "Scheduled", "node-1"),   # the memory-pressure taint only comes with the 35 s status update
        (61.0, "Evicted", "node-1"),     # warmed up again at 60 s; node-1's loop runs at 31, 41, ... s
        (61.0, "Scheduled", "node-2"),   # now node-1 is tainted
    ]
    assert run.phase("cache") == "Running"
    assert "pingPongAvoidance" not in run.eviction


def test_with_avoidance_the_replacement_goes_elsewhere_at_once():
    run = run_path(EXAMPLES / "eviction" / "ping-pong-avoided.yaml")
    assert web_placements(run) == [
        (0.0, "Scheduled", "node-1"),
        (30.0, "Evicted", "node-1"),
        (30.0, "Scheduled", "node-2"),
    ]
    [applied] = run.eviction["pingPongAvoidance"]
    assert (applied["time"], applied["nodes"], applied["mode"]) == (30.0, ["node-1"], "Preferred")
    pod = run.sim.cluster.api.get("Pod", "default", applied["pod"].split("/")[1])
    assert pod is not None and pod["metadata"]["annotations"]["kubesched.io/avoided-nodes"] == "node-1"


def test_required_mode(tmp_path):
    docs = list(yaml.safe_load_all((EXAMPLES / "eviction" / "ping-pong-avoided.yaml").read_text()))
    spec = docs[-1]["spec"]
    spec["cluster"]["eviction"]["avoidPingPong"] = {"window": "1m", "duration": "20s", "mode": "Required"}
    run = run_path(write_scenario(tmp_path, docs))
    assert web_placements(run) == [(0.0, "Scheduled", "node-1"), (30.0, "Evicted", "node-1"),
                                   (30.0, "Scheduled", "node-2")]
    [applied] = run.eviction["pingPongAvoidance"]
    pod = run.sim.cluster.api.get("Pod", "default", applied["pod"].split("/")[1])
    assert pod is not None
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]}]}]}


def test_avoidance_expires_after_its_duration():
    loop = EventLoop()
    cluster = EmbeddedCluster(loop, EventLog(loop.now), np.random.default_rng(0))
    avoidance = PingPongAvoidance(cluster, PingPongSettings(window=60, duration=20, mode="Preferred"))
    owner = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": True}]
    evicted = make_pod("a", namespace=None, owner_references=owner, containers=[make_container("c", image="x")])
    avoidance.note_eviction(evicted, "n1", started=0.0)
    fresh = {**evicted, "metadata": {"name": "b", "ownerReferences": owner}}
    cluster.create(fresh)
    assert [a["pod"] for a in avoidance.applied] == ["default/b"]
    loop.call_at(21.0, lambda: None)
    loop.advance()
    cluster.create({**evicted, "metadata": {"name": "c", "ownerReferences": owner}})
    assert [a["pod"] for a in avoidance.applied] == ["default/b"]
    assert "affinity" not in (cluster.api.get("Pod", "default", "c") or {})["spec"]


def test_evictions_long_after_the_start_do_not_count(tmp_path):
    docs = list(yaml.safe_load_all((EXAMPLES / "eviction" / "ping-pong-avoided.yaml").read_text()))
    docs[-1]["spec"]["cluster"]["eviction"]["avoidPingPong"]["window"] = "10s"  # web is evicted 30 s in
    run = run_path(write_scenario(tmp_path, docs))
    assert web_placements(run)[2] == (30.0, "Scheduled", "node-1")
    assert run.eviction["pingPongAvoidance"] == []


def test_affinity_rewrite_keeps_existing_terms():
    pod = {"metadata": {"name": "p"}, "spec": {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}}}}}
    required = with_avoided_nodes(pod, ["n1", "n2"], "Required")
    terms = required["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    assert [t["matchFields"] for t in terms] == [[{"key": "metadata.name", "operator": "NotIn",
                                                   "values": ["n1", "n2"]}]] * 2
    assert terms[0]["matchExpressions"][0]["values"] == ["a"]
    assert "matchFields" not in pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]  # the original is untouched
    preferred = with_avoided_nodes({"metadata": {"name": "p"}, "spec": {}}, ["n1"], "Preferred")
    assert preferred["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] == [
        {"weight": 100, "preference": {"matchFields": [{"key": "metadata.name", "operator": "NotIn",
                                                        "values": ["n1"]}]}}]
