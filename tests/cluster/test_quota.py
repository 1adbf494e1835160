"""ResourceQuota admission, scopes and usage release, as the v1.28 API server does them (upstream
`pkg/quota/v1/evaluator/core/pods.go`, `staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/`)."""

from __future__ import annotations

import pytest
from cluster_helpers import bind, container, get_pod, make_cluster, node, pod, quota, run

from kubesched.k8s.objects import ApiError
from kubesched.testkit.builders import make_priority_class


def used(cluster, name="q", ns="default"):
    return cluster.api.get("ResourceQuota", ns, name)["status"]["used"]


@pytest.fixture
def classes(cluster):
    cluster.create(make_priority_class("high", 1000))
    cluster.create(make_priority_class("low", 100))
    return cluster


def test_quota_status_is_initialised_from_existing_pods(cluster):
    cluster.create(pod("a", cpu="250m"))
    cluster.create(quota("q", {"pods": "5", "requests.cpu": "2", "services": "3"}))
    status = cluster.api.get("ResourceQuota", "default", "q")["status"]
    assert status["hard"] == {"pods": "5", "requests.cpu": "2", "services": "3"}
    assert status["used"] == {"pods": "1", "requests.cpu": "250m", "services": "0"}


def test_exceeded_quota_message(cluster):
    cluster.create(quota("q", {"pods": "1"}))
    assert cluster.create(pod("a")) is not None
    assert used(cluster) == {"pods": "1"}
    assert cluster.create(pod("b")) is None
    rej = cluster.log.rejected[-1]
    assert rej["code"] == 403
    assert rej["message"] == 'pods "b" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1'


def test_exceeded_lists_only_exceeded_resources_sorted(cluster):
    cluster.create(quota("q", {"pods": "10", "requests.cpu": "1", "requests.memory": "1Gi", "cpu": "1"}))
    cluster.create(pod("a", cpu="600m", memory="512Mi"))
    assert cluster.create(pod("b", cpu="600m", memory="256Mi")) is None
    assert cluster.log.rejected[-1]["message"] == (
        'pods "b" is forbidden: exceeded quota: q, requested: cpu=600m,requests.cpu=600m, '
        "used: cpu=600m,requests.cpu=600m, limited: cpu=1,requests.cpu=1"
    )


def test_cpu_quota_requires_requests(cluster):
    cluster.create(quota("q", {"requests.cpu": "2", "limits.memory": "1Gi"}))
    assert cluster.create(pod("a", cpu="100m")) is None
    assert cluster.log.rejected[-1]["message"] == (
        'pods "a" is forbidden: failed quota: q: must specify limits.memory for: c'
    )
    two = pod("b")
    two["spec"]["containers"] = [container(name="x"), container(name="y", cpu="1")]
    assert cluster.create(two) is None
    assert cluster.log.rejected[-1]["message"] == (
        'pods "b" is forbidden: failed quota: q: must specify limits.memory for: x,y; requests.cpu for: x'
    )


def test_scope_priority_class_in_counts_only_that_class(classes):
    cluster = classes
    cluster.create(quota("q", {"pods": "1"}, scopeSelector={"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}))
    assert cluster.create(pod("h1", priorityClassName="high")) is not None
    assert cluster.create(pod("l1", priorityClassName="low")) is not None
    assert cluster.create(pod("none")) is not None
    assert cluster.create(pod("h2", priorityClassName="high")) is None
    assert used(cluster) == {"pods": "1"}


def test_scope_priority_class_not_in_counts_classless_pods(classes):
    cluster = classes
    cluster.create(quota("q", {"pods": "2"}, scopeSelector={"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "NotIn", "values": ["high"]}]}))
    assert cluster.create(pod("h1", priorityClassName="high")) is not None
    assert cluster.create(pod("none")) is not None
    assert cluster.create(pod("l1", priorityClassName="low")) is not None
    assert used(cluster) == {"pods": "2"}
    assert cluster.create(pod("none2")) is None


def test_scope_priority_class_does_not_exist_counts_only_classless(classes):
    cluster = classes
    cluster.create(quota("q", {"pods": "1"}, scopeSelector={"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "DoesNotExist"}]}))
    assert cluster.create(pod("l1", priorityClassName="low")) is not None
    assert cluster.create(pod("none")) is not None
    assert cluster.create(pod("none2")) is None
    cluster.create(make_priority_class("def", 5, globalDefault=True))
    # the default class fills in priorityClassName before quota sees the pod
    assert cluster.create(pod("defaulted")) is not None


def test_scope_priority_class_exists(classes):
    cluster = classes
    cluster.create(quota("q", {"pods": "1"}, scopeSelector={"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "Exists"}]}))
    assert cluster.create(pod("none")) is not None
    assert cluster.create(pod("l1", priorityClassName="low")) is not None
    assert cluster.create(pod("h1", priorityClassName="high")) is None


@pytest.mark.parametrize(
    ("scope", "admitted"),
    [
        ("BestEffort", {"burstable"}),
        ("NotBestEffort", {"besteffort", "deadline"}),
        ("Terminating", {"besteffort", "burstable"}),
        ("NotTerminating", {"deadline"}),
    ],
)
def test_basic_scopes(cluster, scope, admitted):
    pods = {
        "besteffort": pod("besteffort"),
        "burstable": pod("burstable", cpu="100m"),
        "deadline": pod("deadline", activeDeadlineSeconds=60),
    }
    cluster.create(quota("q", {"pods": "0"}, scopes=[scope]))
    assert {name for name, obj in pods.items() if cluster.create(obj) is not None} == admitted


def test_scope_cross_namespace_pod_affinity(cluster):
    cluster.create(quota("q", {"pods": "0"}, scopes=["CrossNamespacePodAffinity"]))
    term = {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "kubernetes.io/hostname"}
    assert cluster.create(pod("same-ns", affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term]}})) is not None
    assert cluster.create(pod("cross", affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{**term, "namespaceSelector": {}}]}})) is None


def test_quota_in_other_namespace_does_not_apply(cluster):
    cluster.create(quota("q", {"pods": "0"}, namespace="other"))
    assert cluster.create(pod("a")) is not None
    assert cluster.create(pod("b", namespace="other")) is None


def test_usage_released_when_pod_finishes_and_when_deleted(cluster):
    cluster.create(node("n1"))
    cluster.create(quota("q", {"pods": "1", "count/pods": "5", "requests.cpu": "1"}))
    cluster.create(pod("a", cpu="500m"))
    assert used(cluster) == {"count/pods": "1", "pods": "1", "requests.cpu": "500m"}
    bind(cluster, "a")
    cluster.node_agent.set_terminal(get_pod(cluster, "a"), "Succeeded")
    assert used(cluster) == {"count/pods": "1", "pods": "0", "requests.cpu": "0"}
    assert cluster.create(pod("b", cpu="500m")) is not None
    cluster.delete("Pod", "default", "a")
    assert used(cluster) == {"count/pods": "1", "pods": "1", "requests.cpu": "500m"}


def test_terminating_pod_keeps_its_quota_until_gone(cluster):
    cluster.create(node("n1"))
    cluster.create(quota("q", {"pods": "1"}))
    cluster.create(pod("a"))
    bind(cluster, "a")
    cluster.delete("Pod", "default", "a")
    assert used(cluster) == {"pods": "1"}
    assert cluster.create(pod("b")) is None
    run(cluster, 31)
    assert cluster.api.get("Pod", "default", "a") is None
    assert used(cluster) == {"pods": "0"}
    assert cluster.create(pod("b")) is not None


def test_quota_spec_change_recounts(cluster):
    cluster.create(quota("q", {"pods": "5"}))
    cluster.create(pod("a", cpu="1"))
    cluster.api.patch("ResourceQuota", "default", "q", {"spec": {"hard": {"pods": "5", "requests.cpu": "4"}}})
    assert cluster.api.get("ResourceQuota", "default", "q")["status"] == {
        "hard": {"pods": "5", "requests.cpu": "4"},
        "used": {"pods": "1", "requests.cpu": "1"},
    }


def test_extended_resource_and_hugepages_usage(cluster):
    cluster.create(quota("q", {"requests.example.com/gpu": "1", "requests.hugepages-2Mi": "4Mi"}))
    gpu = pod("g")
    gpu["spec"]["containers"][0]["resources"] = {"limits": {"example.com/gpu": "1", "hugepages-2Mi": "2Mi"}}
    assert cluster.create(gpu) is not None
    assert used(cluster) == {"requests.example.com/gpu": "1", "requests.hugepages-2Mi": "2Mi"}
    gpu["metadata"]["name"] = "g2"
    assert cluster.create(gpu) is None
    assert "requested: requests.example.com/gpu=1" in cluster.log.rejected[-1]["message"]


# -- limitedResources ------------------------------------------------------------------------------
LIMIT_CRITICAL = [
    {
        "resource": "pods",
        "matchScopes": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["system-node-critical", "system-cluster-critical"]}
        ],
    }
]


def with_limited(limited):
    cluster = make_cluster()
    cluster.configure({"admission": {"limitedResources": limited}})
    return cluster


def test_limited_scope_without_covering_quota_is_refused():
    cluster = with_limited(LIMIT_CRITICAL)
    assert cluster.create(pod("plain")) is not None
    assert cluster.create(pod("crit", priorityClassName="system-node-critical")) is None
    rej = cluster.log.rejected[-1]
    assert rej["code"] == 500
    assert rej["message"] == (
        "insufficient quota to match these scopes: [{PriorityClass In [system-node-critical system-cluster-critical]}]"
    )


def test_limited_scope_with_covering_quota_is_admitted():
    cluster = with_limited(LIMIT_CRITICAL)
    cluster.create(quota("crit", {"pods": "10"}, namespace="kube-system", scopeSelector={"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["system-node-critical"]}]}))
    assert cluster.create(pod("crit", namespace="kube-system", priorityClassName="system-node-critical")) is not None
    assert used(cluster, "crit", "kube-system") == {"pods": "1"}
    # covered by scope name only: a quota scoped to another class name does not cover
    assert cluster.create(pod("crit2", namespace="kube-system", priorityClassName="system-cluster-critical")) is None
    # a quota in another namespace covers nothing here
    assert cluster.create(pod("crit", priorityClassName="system-node-critical")) is None


def test_limited_resource_consumption_needs_a_quota():
    cluster = with_limited([{"resource": "pods", "matchContains": ["example.com/gpu"]}])
    gpu = pod("g")
    gpu["spec"]["containers"][0]["resources"] = {"requests": {"example.com/gpu": "1"}}
    with pytest.raises(ApiError) as err:
        cluster.api.admission.admit_create(gpu, 0.0)
    assert (err.value.code, err.value.message) == (
        403, 'pods "g" is forbidden: insufficient quota to consume: requests.example.com/gpu'
    )
    cluster.create(quota("gpu", {"requests.example.com/gpu": "4"}))
    assert cluster.create(gpu) is not None
