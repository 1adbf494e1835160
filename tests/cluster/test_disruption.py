"""PodDisruptionBudget status controller."""

from __future__ import annotations

from cluster_helpers import bind, daemonset, deployment, node, pdb, pod, pods_of, run

from kubesched.cluster.embedded.controllers.disruption import scaled_value


def status(cluster, name="b"):
    s = cluster.api.get("PodDisruptionBudget", "default", name)["status"]
    return {k: s[k] for k in ("currentHealthy", "desiredHealthy", "expectedPods", "disruptionsAllowed")}


def running_pods(cluster, n, labels=None, prefix="p"):
    labels = labels or {"app": "a"}
    for i in range(n):
        cluster.create(pod(f"{prefix}{i}", labels=labels))
        bind(cluster, f"{prefix}{i}")


def test_min_available_int(cluster):
    cluster.create(node("n1"))
    running_pods(cluster, 3)
    cluster.create(pdb("b", {"app": "a"}, minAvailable=2))
    assert status(cluster) == {"currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3, "disruptionsAllowed": 1}
    cond = cluster.api.get("PodDisruptionBudget", "default", "b")["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == ("DisruptionAllowed", "True", "SufficientPods")
    cluster.delete("Pod", "default", "p0")  # terminating: no longer healthy
    assert status(cluster) == {"currentHealthy": 2, "desiredHealthy": 2, "expectedPods": 3, "disruptionsAllowed": 0}
    run(cluster, 31)
    assert status(cluster)["expectedPods"] == 2


def test_pending_pods_are_not_healthy(cluster):
    cluster.create(node("n1"))
    cluster.create(pdb("b", {"app": "a"}, minAvailable=1))
    assert status(cluster) == {"currentHealthy": 0, "desiredHealthy": 1, "expectedPods": 0, "disruptionsAllowed": 0}
    cluster.create(pod("x", labels={"app": "a"}))
    cluster.create(pod("y", labels={"app": "a"}))
    assert status(cluster)["expectedPods"] == 2 and status(cluster)["currentHealthy"] == 0
    bind(cluster, "x")
    bind(cluster, "y")
    assert status(cluster)["disruptionsAllowed"] == 1


def test_max_unavailable_uses_deployment_scale(cluster):
    cluster.create(node("n1"))
    cluster.create(deployment("web", 4))
    cluster.create(pdb("b", {"app": "web"}, maxUnavailable="25%"))
    (rs,) = cluster.api.list("ReplicaSet")
    pods = pods_of(cluster, "ReplicaSet", rs["metadata"]["name"])
    for p in pods[:3]:
        bind(cluster, p)
    assert status(cluster) == {"currentHealthy": 3, "desiredHealthy": 3, "expectedPods": 4, "disruptionsAllowed": 0}
    bind(cluster, pods[3])
    assert status(cluster)["disruptionsAllowed"] == 1
    cluster.api.patch("Deployment", "default", "web", {"spec": {"replicas": 8}})
    assert status(cluster)["expectedPods"] == 8
    assert status(cluster)["desiredHealthy"] == 6


def test_min_available_percent_on_bare_pods_expects_nothing(cluster):
    cluster.create(node("n1"))
    running_pods(cluster, 2)
    cluster.create(pdb("b", {"app": "a"}, minAvailable="50%"))
    assert status(cluster) == {"currentHealthy": 2, "desiredHealthy": 0, "expectedPods": 0, "disruptionsAllowed": 0}


def test_pod_of_unscaled_controller_fails_sync(cluster):
    cluster.create(node("n1"))
    cluster.create(daemonset("ds"))
    cluster.create(pdb("b", {"app": "ds"}, maxUnavailable=1))
    s = cluster.api.get("PodDisruptionBudget", "default", "b")["status"]
    assert s["disruptionsAllowed"] == 0
    assert s["conditions"][0]["reason"] == "SyncFailed"
    assert s["conditions"][0]["message"].startswith("found no controllers for pod")


def test_empty_selector_matches_all_pods(cluster):
    cluster.create(node("n1"))
    running_pods(cluster, 2)
    cluster.create({**pdb("b", {}), "spec": {"selector": {}, "minAvailable": 0}})
    assert status(cluster)["disruptionsAllowed"] == 2


def test_pinned_disruptions_allowed_is_kept(cluster):
    cluster.create(node("n1"))
    running_pods(cluster, 3)
    cluster.create(pdb("b", {"app": "a"}, status={"disruptionsAllowed": 0}, minAvailable=1))
    assert status(cluster) == {"currentHealthy": 3, "desiredHealthy": 1, "expectedPods": 3, "disruptionsAllowed": 0}
    cluster.create(pod("more", labels={"app": "a"}))
    bind(cluster, "more")
    assert status(cluster)["currentHealthy"] == 4
    assert status(cluster)["disruptionsAllowed"] == 0


def test_label_change_moves_pod_in_and_out(cluster):
    cluster.create(node("n1"))
    running_pods(cluster, 2)
    cluster.create(pdb("b", {"app": "a"}, minAvailable=1))
    assert status(cluster)["disruptionsAllowed"] == 1
    cluster.api.patch("Pod", "default", "p0", {"metadata": {"labels": {"app": "other"}}})
    assert status(cluster)["expectedPods"] == 1 and status(cluster)["disruptionsAllowed"] == 0


def test_status_written_only_on_change(cluster):
    cluster.create(node("n1"))
    running_pods(cluster, 2)
    cluster.create(pdb("b", {"app": "a"}, minAvailable=1))
    rv = cluster.api.get("PodDisruptionBudget", "default", "b")["metadata"]["resourceVersion"]
    cluster.api.patch("Pod", "default", "p0", {"status": {"nominatedNodeName": "n1"}})
    assert cluster.api.get("PodDisruptionBudget", "default", "b")["metadata"]["resourceVersion"] == rv


def test_scaled_value_rounds_up():
    assert scaled_value("25%", 5) == 2
    assert scaled_value(3, 10) == 3
    assert scaled_value("0%", 7) == 0


def test_disrupted_pods_are_not_healthy_for_two_minutes(cluster):
    from kubesched.k8s.timefmt import rfc3339

    cluster.create(node("n1"))
    running_pods(cluster, 3)
    cluster.create(pdb("b", {"app": "a"}, minAvailable=1))
    assert status(cluster)["disruptionsAllowed"] == 2
    cluster.api.patch("PodDisruptionBudget", "default", "b", {"status": {"disruptedPods": {"p0": rfc3339(0)}}})
    assert status(cluster)["currentHealthy"] == 2 and status(cluster)["disruptionsAllowed"] == 1
    run(cluster, 119)
    assert status(cluster)["currentHealthy"] == 2
    run(cluster, 121)
    assert status(cluster)["currentHealthy"] == 3
    assert "disruptedPods" not in cluster.api.get("PodDisruptionBudget", "default", "b")["status"]


def test_invalid_percentage_fails_sync(cluster):
    cluster.create(node("n1"))
    running_pods(cluster, 1)
    cluster.create(pdb("b", {"app": "a"}, maxUnavailable="1"))
    s = cluster.api.get("PodDisruptionBudget", "default", "b")["status"]
    assert s["disruptionsAllowed"] == 0
    assert s["conditions"][0]["message"] == "invalid value for IntOrString: invalid type: string is not a percentage"


# -- the label index against every budget ------------------------------------------------------------
import hypothesis.strategies as st  # noqa: E402
from cluster_helpers import make_cluster  # noqa: E402
from hypothesis import given, settings  # noqa: E402

from kubesched.api.selectors import LabelSelector  # noqa: E402
from kubesched.cluster.embedded.controllers.disruption import DisruptionController  # noqa: E402
from kubesched.testkit.builders import make_pdb  # noqa: E402

_LABELS = st.dictionaries(st.sampled_from(["app", "tier", "team"]), st.sampled_from(["a", "b"]), max_size=3)
_SELECTORS = st.one_of(
    st.none(), st.just({}),
    _LABELS.map(lambda labels: {"matchLabels": labels}),
    st.builds(lambda labels, key, op: {"matchLabels": labels, "matchExpressions": [
        {"key": key, "operator": op, **({"values": ["a"]} if op in ("In", "NotIn") else {})}]},
        _LABELS, st.sampled_from(["app", "tier"]), st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"])),
)
_STEPS = st.lists(st.tuples(st.sampled_from(["create", "relabel", "delete", "pdb", "drop-pdb"]),
                            st.integers(0, 5), _LABELS, _SELECTORS), max_size=25)


@settings(max_examples=60, deadline=None)
@given(_STEPS)
def test_each_budget_has_exactly_the_pods_its_selector_matches(steps) -> None:
    cluster = make_cluster()
    for action, i, labels, selector in steps:
        name = f"p{i}"
        present = cluster.api.get("Pod", "default", name) is not None
        if action == "create" and not present:
            cluster.create(pod(name, labels=labels))
        elif action == "relabel" and present:
            cluster.api.patch("Pod", "default", name, {"metadata": {"labels": labels or None}})
        elif action == "delete" and present:
            cluster.api.delete("Pod", "default", name)
        elif action == "pdb":
            spec_selector = selector
            if cluster.api.get("PodDisruptionBudget", "default", f"b{i}") is not None:
                cluster.api.delete("PodDisruptionBudget", "default", f"b{i}")
            obj = make_pdb(f"b{i}", spec_selector, namespace="default", minAvailable=1)
            if spec_selector is None:
                obj["spec"].pop("selector", None)
            cluster.create(obj)
        elif action == "drop-pdb" and cluster.api.get("PodDisruptionBudget", "default", f"b{i}") is not None:
            cluster.api.delete("PodDisruptionBudget", "default", f"b{i}")
    controller = next(c for c in cluster.controllers if isinstance(c, DisruptionController))
    pods = cluster.api.list("Pod")
    for pdb_obj in cluster.api.list("PodDisruptionBudget"):
        selector = LabelSelector.from_dict((pdb_obj.get("spec") or {}).get("selector"))
        expected = {p["metadata"]["name"] for p in pods if selector.matches(p["metadata"].get("labels") or {})}
        budget = controller._budgets[f"default/{pdb_obj['metadata']['name']}"]
        assert set(budget.members) == expected
