"""Job controller."""

from __future__ import annotations

from cluster_helpers import bind, get_pod, job, node, pods_of, run

from kubesched.cluster.embedded.controllers.job import backoff_delay


def active(cluster, name):
    return [p for p in pods_of(cluster, "Job", name)
            if p["status"]["phase"] not in ("Succeeded", "Failed") and not p["metadata"].get("deletionTimestamp")]


def finish(cluster, pod, phase="Succeeded"):
    bind(cluster, pod, "n1")
    cluster.node_agent.set_terminal(get_pod(cluster, pod["metadata"]["name"]), phase)


def conditions(cluster, name):
    return {c["type"]: c for c in (cluster.api.get("Job", "default", name)["status"].get("conditions") or [])}


def test_parallelism_and_completions(cluster):
    cluster.create(node("n1"))
    cluster.create(job("j", parallelism=2, completions=3))
    pods = active(cluster, "j")
    assert len(pods) == 2
    p = pods[0]
    assert p["metadata"]["labels"]["job-name"] == "j"
    assert p["metadata"]["labels"]["batch.kubernetes.io/controller-uid"]
    finish(cluster, pods[0])
    assert len(active(cluster, "j")) == 2  # one more to go, still 2 at a time
    finish(cluster, active(cluster, "j")[0])
    assert len(active(cluster, "j")) == 1  # only one completion missing
    finish(cluster, active(cluster, "j")[0])
    status = cluster.api.get("Job", "default", "j")["status"]
    assert status["succeeded"] == 3 and status["active"] == 0
    assert conditions(cluster, "j")["Complete"]["status"] == "True"
    assert "completionTime" in status


def test_defaults_one_pod_one_completion(cluster):
    cluster.create(node("n1"))
    cluster.create(job("j"))
    (p,) = active(cluster, "j")
    finish(cluster, p)
    assert "Complete" in conditions(cluster, "j")
    assert len(pods_of(cluster, "Job", "j")) == 1


def test_no_completions_any_success_completes(cluster):
    cluster.create(node("n1"))
    cluster.create(job("j", parallelism=3, completions=None))
    pods = active(cluster, "j")
    assert len(pods) == 3
    finish(cluster, pods[0])
    assert len(active(cluster, "j")) == 2  # nothing new after the first success
    assert "Complete" not in conditions(cluster, "j")
    finish(cluster, pods[1])
    finish(cluster, pods[2], "Failed")
    assert "Complete" in conditions(cluster, "j")
    assert len(pods_of(cluster, "Job", "j")) == 3


def test_failed_pod_recreated_after_backoff(cluster):
    cluster.create(node("n1"))
    cluster.create(job("j"))
    (p,) = active(cluster, "j")
    finish(cluster, p, "Failed")
    assert active(cluster, "j") == []
    assert cluster.api.get("Job", "default", "j")["status"]["failed"] == 1
    run(cluster, 9.9)
    assert active(cluster, "j") == []
    run(cluster, 10.0)
    (p2,) = active(cluster, "j")
    finish(cluster, p2, "Failed")
    run(cluster, 29.9)
    assert active(cluster, "j") == []  # second failure: 20 s
    run(cluster, 30.0)
    assert len(active(cluster, "j")) == 1


def test_backoff_limit_fails_the_job(cluster):
    cluster.create(node("n1"))
    cluster.create(job("j", backoffLimit=1))
    finish(cluster, active(cluster, "j")[0], "Failed")
    run(cluster, 10)
    finish(cluster, active(cluster, "j")[0], "Failed")
    cond = conditions(cluster, "j")["Failed"]
    assert (cond["reason"], cond["message"]) == ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
    run(cluster, 100)
    assert active(cluster, "j") == []
    assert cluster.api.get("Job", "default", "j")["status"]["failed"] == 2


def test_deleted_pod_counts_as_failed(cluster):
    cluster.create(job("j"))
    (p,) = active(cluster, "j")
    cluster.delete("Pod", "default", p["metadata"]["name"])
    assert cluster.api.get("Job", "default", "j")["status"]["failed"] == 1
    run(cluster, 10)
    assert len(active(cluster, "j")) == 1


def test_suspend_removes_active_pods(cluster):
    cluster.create(job("j", parallelism=2, completions=2))
    assert len(active(cluster, "j")) == 2
    cluster.api.patch("Job", "default", "j", {"spec": {"suspend": True}})
    assert active(cluster, "j") == []
    assert cluster.api.get("Job", "default", "j")["status"]["failed"] == 0


def test_backoff_delay_schedule():
    assert [backoff_delay(n) for n in range(0, 9)] == [0, 10, 20, 40, 80, 160, 320, 600, 600]
