"""ReplicaSet and Deployment controllers."""

from __future__ import annotations

from cluster_helpers import bind, deployment, get_pod, node, pods_of, quota, replicaset, run

from kubesched.testkit.builders import make_priority_class


def active(pods):
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")
            and p["status"]["phase"] not in ("Succeeded", "Failed")]


def test_replicaset_creates_named_owned_pods(cluster):
    rs = cluster.create(replicaset("web", 3))
    pods = pods_of(cluster, "ReplicaSet", "web")
    assert len(pods) == 3
    for p in pods:
        name = p["metadata"]["name"]
        assert name.startswith("web-") and len(name) == len("web-") + 5
        assert p["metadata"]["generateName"] == "web-"
        assert p["metadata"]["labels"] == {"app": "web"}
        (ref,) = p["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == ("ReplicaSet", "web", rs["metadata"]["uid"], True)
        assert p["spec"]["priority"] == 0  # went through admission
    assert cluster.api.get("ReplicaSet", "default", "web")["status"]["replicas"] == 3


def test_pod_names_are_deterministic():
    from cluster_helpers import make_cluster

    names = []
    for _ in range(2):
        c = make_cluster()
        c.create(replicaset("web", 2))
        names.append([p["metadata"]["name"] for p in pods_of(c, "ReplicaSet", "web")])
    assert names[0] == names[1]


def test_deleted_pod_is_replaced(cluster):
    cluster.create(replicaset("web", 2))
    victim = pods_of(cluster, "ReplicaSet", "web")[0]
    cluster.delete("Pod", "default", victim["metadata"]["name"])  # unscheduled: removed at once
    pods = pods_of(cluster, "ReplicaSet", "web")
    assert len(pods) == 2 and victim["metadata"]["name"] not in {p["metadata"]["name"] for p in pods}


def test_terminating_pod_is_replaced_at_once(cluster):
    cluster.create(node("n1"))
    cluster.create(replicaset("web", 1))
    (p,) = pods_of(cluster, "ReplicaSet", "web")
    bind(cluster, p, "n1")
    cluster.delete("Pod", "default", p["metadata"]["name"])
    pods = pods_of(cluster, "ReplicaSet", "web")
    assert len(pods) == 2 and len(active(pods)) == 1
    run(cluster, 31)
    assert len(pods_of(cluster, "ReplicaSet", "web")) == 1


def test_failed_pod_is_replaced_and_kept(cluster):
    cluster.create(node("n1"))
    cluster.create(replicaset("web", 1))
    (p,) = pods_of(cluster, "ReplicaSet", "web")
    bind(cluster, p, "n1")
    cluster.node_agent.set_terminal(get_pod(cluster, p["metadata"]["name"]), "Failed", "Evicted", "gone")
    pods = pods_of(cluster, "ReplicaSet", "web")
    assert len(pods) == 2 and len(active(pods)) == 1


def test_scale_down_prefers_unscheduled_pods(cluster):
    cluster.create(node("n1"))
    cluster.create(replicaset("web", 3))
    pods = pods_of(cluster, "ReplicaSet", "web")
    bound = pods[1]["metadata"]["name"]
    bind(cluster, pods[1], "n1")
    cluster.api.patch("ReplicaSet", "default", "web", {"spec": {"replicas": 1}})
    assert [p["metadata"]["name"] for p in pods_of(cluster, "ReplicaSet", "web")] == [bound]


def test_scale_up(cluster):
    cluster.create(replicaset("web", 1))
    cluster.api.patch("ReplicaSet", "default", "web", {"spec": {"replicas": 4}})
    assert len(pods_of(cluster, "ReplicaSet", "web")) == 4


def test_quota_refusal_is_retried_when_quota_frees(cluster):
    cluster.create(quota("q", {"pods": "2"}))
    cluster.create(replicaset("web", 3))
    assert len(pods_of(cluster, "ReplicaSet", "web")) == 2
    rejected = [r for r in cluster.log.rejected if r["kind"] == "Pod"]
    assert len(rejected) == 1
    assert "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2" in rejected[0]["message"]
    cluster.api.patch("ResourceQuota", "default", "q", {"spec": {"hard": {"pods": "3"}}})
    assert len(pods_of(cluster, "ReplicaSet", "web")) == 3


def test_unknown_priority_class_retried_when_class_appears(cluster):
    cluster.create(replicaset("web", 1, priorityClassName="later"))
    assert pods_of(cluster, "ReplicaSet", "web") == []
    assert cluster.log.rejected[-1]["message"] == 'pods "web-" is forbidden: no PriorityClass with name later was found'
    cluster.create(make_priority_class("later", 10))
    (p,) = pods_of(cluster, "ReplicaSet", "web")
    assert p["spec"]["priority"] == 10


def test_deleting_replicaset_deletes_pods(cluster):
    cluster.create(replicaset("web", 2))
    cluster.delete("ReplicaSet", "default", "web")
    assert pods_of(cluster, "ReplicaSet", "web") == []


def test_deployment_creates_replicaset_and_pods(cluster):
    d = cluster.create(deployment("api", 2))
    (rs,) = cluster.api.list("ReplicaSet")
    name = rs["metadata"]["name"]
    h = rs["metadata"]["labels"]["pod-template-hash"]
    assert name == f"api-{h}" and 1 <= len(h) <= 10
    assert rs["spec"]["replicas"] == 2
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "api", "pod-template-hash": h}
    assert rs["metadata"]["ownerReferences"][0]["uid"] == d["metadata"]["uid"]
    pods = pods_of(cluster, "ReplicaSet", name)
    assert len(pods) == 2
    assert all(p["metadata"]["labels"] == {"app": "api", "pod-template-hash": h} for p in pods)
    status = cluster.api.get("Deployment", "default", "api")["status"]
    assert status["replicas"] == 2 and status["updatedReplicas"] == 2


def test_deployment_scale_and_template_change(cluster):
    cluster.create(deployment("api", 2))
    cluster.api.patch("Deployment", "default", "api", {"spec": {"replicas": 3}})
    (rs,) = cluster.api.list("ReplicaSet")
    assert rs["spec"]["replicas"] == 3
    assert len(pods_of(cluster, "ReplicaSet", rs["metadata"]["name"])) == 3
    cluster.api.patch("Deployment", "default", "api", {"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}})
    rss = {r["metadata"]["name"]: r for r in cluster.api.list("ReplicaSet")}
    assert len(rss) == 2
    assert rss[rs["metadata"]["name"]]["spec"]["replicas"] == 0
    (new_name,) = set(rss) - {rs["metadata"]["name"]}
    assert rss[new_name]["spec"]["replicas"] == 3
    assert len(pods_of(cluster, "ReplicaSet", new_name)) == 3


def test_deleting_deployment_deletes_everything(cluster):
    cluster.create(deployment("api", 2))
    cluster.delete("Deployment", "default", "api")
    assert cluster.api.list("ReplicaSet") == []
    assert cluster.api.list("Pod") == []


def test_objects_existing_before_start_are_reconciled():
    from cluster_helpers import make_cluster

    c = make_cluster(controllers=False)
    c.create(replicaset("web", 2))
    assert pods_of(c, "ReplicaSet", "web") == []
    c.start_controllers()
    assert len(pods_of(c, "ReplicaSet", "web")) == 2
