"""StatefulSet and DaemonSet controllers."""

from __future__ import annotations

from cluster_helpers import bind, daemonset, get_pod, node, pods_of, quota, run, statefulset


def names(pods):
    return [p["metadata"]["name"] for p in pods]


# -- StatefulSet -----------------------------------------------------------------------------------
def test_ordered_ready_creates_one_at_a_time(cluster):
    cluster.create(node("n1"))
    cluster.create(statefulset("db", 3))
    assert names(pods_of(cluster, "StatefulSet", "db")) == ["db-0"]
    p0 = get_pod(cluster, "db-0")
    assert p0["spec"]["hostname"] == "db-0" and p0["spec"]["subdomain"] == "db"
    assert p0["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "db-0"
    assert p0["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "0"
    bind(cluster, "db-0")  # Running and Ready at once
    assert names(pods_of(cluster, "StatefulSet", "db")) == ["db-0", "db-1"]
    bind(cluster, "db-1")
    bind(cluster, "db-2")
    status = cluster.api.get("StatefulSet", "default", "db")["status"]
    assert status["replicas"] == 3 and status["readyReplicas"] == 3


def test_parallel_creates_all(cluster):
    cluster.create(statefulset("db", 3, podManagementPolicy="Parallel"))
    assert names(pods_of(cluster, "StatefulSet", "db")) == ["db-0", "db-1", "db-2"]


def test_ordinals_start(cluster):
    cluster.create(statefulset("db", 2, podManagementPolicy="Parallel", ordinals={"start": 5}))
    assert names(pods_of(cluster, "StatefulSet", "db")) == ["db-5", "db-6"]


def test_deleted_pod_recreated_with_same_name_after_termination(cluster):
    cluster.create(node("n1"))
    cluster.create(statefulset("db", 2))
    bind(cluster, "db-0")
    bind(cluster, "db-1")
    old_uid = get_pod(cluster, "db-1")["metadata"]["uid"]
    cluster.delete("Pod", "default", "db-1")
    assert get_pod(cluster, "db-1")["metadata"]["uid"] == old_uid  # still terminating
    run(cluster, 31)
    new = get_pod(cluster, "db-1")
    assert new["metadata"]["uid"] != old_uid
    assert new["status"]["phase"] == "Pending"


def test_failed_pod_is_recreated(cluster):
    cluster.create(node("n1"))
    cluster.create(statefulset("db", 1))
    bind(cluster, "db-0")
    old_uid = get_pod(cluster, "db-0")["metadata"]["uid"]
    cluster.node_agent.set_terminal(get_pod(cluster, "db-0"), "Failed")
    assert get_pod(cluster, "db-0")["metadata"]["uid"] != old_uid


def test_ordered_scale_down_highest_first_one_at_a_time(cluster):
    cluster.create(node("n1"))
    cluster.create(statefulset("db", 3))
    for i in range(3):
        bind(cluster, f"db-{i}")
    cluster.api.patch("StatefulSet", "default", "db", {"spec": {"replicas": 1}})
    terminating = [p for p in pods_of(cluster, "StatefulSet", "db") if p["metadata"].get("deletionTimestamp")]
    assert names(terminating) == ["db-2"]
    run(cluster, 31)
    assert names(pods_of(cluster, "StatefulSet", "db")) == ["db-0", "db-1"]
    assert get_pod(cluster, "db-1")["metadata"].get("deletionTimestamp")
    run(cluster, 62)
    assert names(pods_of(cluster, "StatefulSet", "db")) == ["db-0"]


# -- DaemonSet -------------------------------------------------------------------------------------
def test_daemonset_pod_per_eligible_node(cluster):
    cluster.create(node("n1", labels={"disk": "ssd"}))
    cluster.create(node("n2", labels={"disk": "ssd"}, spec={"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}))
    cluster.create(node("n3"))
    cluster.create(node("n4", labels={"disk": "ssd"}, spec={"unschedulable": True}))
    cluster.create(daemonset("agent", nodeSelector={"disk": "ssd"}))
    pods = pods_of(cluster, "DaemonSet", "agent")
    targets = sorted(
        p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
        ["matchFields"][0]["values"][0]
        for p in pods
    )
    assert targets == ["n1", "n4"]
    tolerations = {(t["key"], t["effect"]) for t in pods[0]["spec"]["tolerations"]}
    assert tolerations == {
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    }
    assert all("tolerationSeconds" not in t for t in pods[0]["spec"]["tolerations"])
    status = cluster.api.get("DaemonSet", "default", "agent")["status"]
    assert status["desiredNumberScheduled"] == 2


def test_daemonset_replaces_required_affinity_terms(cluster):
    cluster.create(node("n1", labels={"zone": "a"}))
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}
    cluster.create(daemonset("agent", affinity=affinity))
    (p,) = pods_of(cluster, "DaemonSet", "agent")
    assert p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]
    }


def test_daemonset_follows_nodes(cluster):
    cluster.create(node("n1"))
    cluster.create(daemonset("agent"))
    assert len(pods_of(cluster, "DaemonSet", "agent")) == 1
    cluster.create(node("n2"))
    assert len(pods_of(cluster, "DaemonSet", "agent")) == 2
    (p2,) = [p for p in pods_of(cluster, "DaemonSet", "agent") if "n2" in str(p["spec"]["affinity"])]
    bind(cluster, p2, "n2")
    cluster.delete("Node", None, "n2")
    assert len(pods_of(cluster, "DaemonSet", "agent")) == 1


def test_daemonset_noexecute_taint_evicts_noschedule_keeps(cluster):
    cluster.create(node("n1"))
    cluster.create(daemonset("agent"))
    (p,) = pods_of(cluster, "DaemonSet", "agent")
    bind(cluster, p, "n1")
    cluster.api.patch("Node", None, "n1", {"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}})
    assert len(pods_of(cluster, "DaemonSet", "agent")) == 1
    cluster.api.patch("Node", None, "n1", {"spec": {"taints": [{"key": "k", "effect": "NoExecute"}]}})
    (p,) = pods_of(cluster, "DaemonSet", "agent")
    assert p["metadata"].get("deletionTimestamp")


def test_daemonset_recreates_failed_pod(cluster):
    cluster.create(node("n1"))
    cluster.create(daemonset("agent"))
    (p,) = pods_of(cluster, "DaemonSet", "agent")
    bind(cluster, p, "n1")
    cluster.node_agent.set_terminal(get_pod(cluster, p["metadata"]["name"]), "Failed")
    (new,) = pods_of(cluster, "DaemonSet", "agent")
    assert new["metadata"]["uid"] != p["metadata"]["uid"]


def test_daemonset_blocked_by_quota_until_released(cluster):
    cluster.create(node("n1"))
    cluster.create(node("n2"))
    cluster.create(quota("q", {"pods": "1"}))
    cluster.create(daemonset("agent"))
    assert len(pods_of(cluster, "DaemonSet", "agent")) == 1
    cluster.api.patch("ResourceQuota", "default", "q", {"spec": {"hard": {"pods": "2"}}})
    assert len(pods_of(cluster, "DaemonSet", "agent")) == 2
