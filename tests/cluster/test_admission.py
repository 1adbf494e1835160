"""Priority admission, PriorityClass validation and pod defaulting, as the v1.28 API server does
them (upstream `plugin/pkg/admission/priority/admission.go`,
`pkg/apis/scheduling/validation/validation.go`)."""

from __future__ import annotations

import pytest
from cluster_helpers import get_pod, make_cluster, pod

from kubesched.cluster.embedded.apiserver.admission import default_priority_class
from kubesched.k8s.objects import ApiError
from kubesched.testkit.builders import make_priority_class


def last_rejection(cluster):
    assert cluster.log.rejected, "nothing was rejected"
    return cluster.log.rejected[-1]


def test_system_classes_exist(cluster):
    node_critical = cluster.api.get("PriorityClass", None, "system-node-critical")
    cluster_critical = cluster.api.get("PriorityClass", None, "system-cluster-critical")
    assert node_critical["value"] == 2000001000
    assert cluster_critical["value"] == 2000000000
    assert node_critical["preemptionPolicy"] == "PreemptLowerPriority"


def test_no_classes_gives_priority_zero(cluster):
    cluster.create(pod("p"))
    spec = get_pod(cluster, "p")["spec"]
    assert spec["priority"] == 0
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert "priorityClassName" not in spec


def test_global_default_class_is_applied(cluster):
    cluster.create(make_priority_class("def", 7, globalDefault=True))
    cluster.create(pod("p"))
    spec = get_pod(cluster, "p")["spec"]
    assert spec["priorityClassName"] == "def"
    assert spec["priority"] == 7


def test_lowest_global_default_wins_if_several_exist(cluster):
    # a race can leave two defaults; admission refuses a second one at create, so the second is made
    # a default by a patch (the embedded API server admits creates only)
    cluster.create(make_priority_class("a", 50, globalDefault=True))
    cluster.create(make_priority_class("b", 10, preemptionPolicy="Never"))
    cluster.patch("PriorityClass", None, "b", {"globalDefault": True})
    assert default_priority_class(cluster.api)["metadata"]["name"] == "b"
    cluster.create(pod("p"))
    spec = get_pod(cluster, "p")["spec"]
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == ("b", 10, "Never")


def test_named_class_sets_priority_and_policy(cluster):
    cluster.create(make_priority_class("high", 1000, preemptionPolicy="Never"))
    cluster.create(pod("p", priorityClassName="high"))
    spec = get_pod(cluster, "p")["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "Never")


def test_class_policy_defaults_to_preempt_lower_priority(cluster):
    cluster.create(make_priority_class("low", 100))
    assert cluster.api.get("PriorityClass", None, "low")["preemptionPolicy"] == "PreemptLowerPriority"


def test_unknown_class_is_forbidden(cluster):
    assert cluster.create(pod("p", priorityClassName="nope")) is None
    assert cluster.api.get("Pod", "default", "p") is None
    rej = last_rejection(cluster)
    assert rej["code"] == 403
    assert rej["name"] == "default/p"
    assert rej["message"] == 'pods "p" is forbidden: no PriorityClass with name nope was found'


def test_second_global_default_is_forbidden(cluster):
    cluster.create(make_priority_class("def", 7, globalDefault=True))
    assert cluster.create(make_priority_class("def2", 8, globalDefault=True)) is None
    rej = last_rejection(cluster)
    assert rej["code"] == 403
    assert rej["message"] == (
        'priorityclasses.scheduling.k8s.io "def2" is forbidden: PriorityClass def is already marked as '
        "default. Only one default can exist"
    )


def test_user_class_above_one_billion_is_invalid(cluster):
    assert cluster.create(make_priority_class("huge", 1_000_000_001)) is None
    rej = last_rejection(cluster)
    assert rej["code"] == 422
    assert rej["message"] == (
        'PriorityClass.scheduling.k8s.io "huge" is invalid: value: Forbidden: maximum allowed value of a '
        "user defined priority is 1000000000"
    )
    assert cluster.create(make_priority_class("max", 1_000_000_000)) is not None


def test_system_prefix_is_reserved(cluster):
    assert cluster.create(make_priority_class("system-foo", 10)) is None
    rej = last_rejection(cluster)
    assert rej["code"] == 422
    assert rej["message"] == (
        'PriorityClass.scheduling.k8s.io "system-foo" is invalid: metadata.name: Forbidden: priority class '
        "names with 'system-' prefix are reserved for system use only. error: system-foo is not a known "
        "system priority class"
    )


def test_system_class_with_wrong_value_is_invalid():
    cluster = make_cluster(controllers=False)
    cluster.delete("PriorityClass", None, "system-node-critical")
    assert cluster.create(make_priority_class("system-node-critical", 5)) is None
    assert last_rejection(cluster)["message"].endswith(
        "error: value of system-node-critical PriorityClass must be 2000001000"
    )


def test_recreating_a_system_class_already_exists(cluster):
    assert cluster.create(make_priority_class("system-node-critical", 2000001000)) is None
    rej = last_rejection(cluster)
    assert rej["code"] == 409
    assert rej["message"] == 'priorityclasses.scheduling.k8s.io "system-node-critical" already exists'


def test_pod_with_different_priority_is_forbidden(cluster):
    cluster.create(make_priority_class("high", 1000))
    assert cluster.create(pod("p", priorityClassName="high", priority=5)) is None
    assert last_rejection(cluster)["message"] == (
        'pods "p" is forbidden: the integer value of priority (5) must not be provided in pod spec; '
        "priority admission controller computed 1000 from the given PriorityClass name"
    )
    assert cluster.create(pod("q", priorityClassName="high", priority=1000)) is not None


def test_pod_priority_without_class_must_be_zero(cluster):
    assert cluster.create(pod("p", priority=3)) is None
    assert "computed 0 from the given PriorityClass name" in last_rejection(cluster)["message"]


def test_pod_with_different_preemption_policy_is_forbidden(cluster):
    cluster.create(make_priority_class("high", 1000))
    assert cluster.create(pod("p", priorityClassName="high", preemptionPolicy="Never")) is None
    assert last_rejection(cluster)["message"] == (
        'pods "p" is forbidden: the string value of PreemptionPolicy (Never) must not be provided in pod '
        "spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name"
    )


def test_generate_name_is_used_in_priority_refusals():
    cluster = make_cluster(controllers=False)
    obj = pod("web-abcde", priorityClassName="missing")
    obj["metadata"]["generateName"] = "web-"
    with pytest.raises(ApiError) as err:
        cluster.api.admission.admit_create(obj, 0.0)
    assert err.value.message == 'pods "web-" is forbidden: no PriorityClass with name missing was found'


def test_pod_defaults(cluster):
    cluster.create(pod("p", cpu="100m"))
    p = get_pod(cluster, "p")
    assert p["spec"]["schedulerName"] == "default-scheduler"
    assert p["spec"]["terminationGracePeriodSeconds"] == 30
    assert p["spec"]["restartPolicy"] == "Always"
    assert p["status"]["phase"] == "Pending"
    assert p["status"]["qosClass"] == "Burstable"
    keys = {(t["key"], t["effect"], t.get("tolerationSeconds")) for t in p["spec"]["tolerations"]}
    assert keys == {
        ("node.kubernetes.io/not-ready", "NoExecute", 300),
        ("node.kubernetes.io/unreachable", "NoExecute", 300),
    }


def test_existing_values_are_kept(cluster):
    cluster.create(pod("p", schedulerName="mine", terminationGracePeriodSeconds=5,
                       tolerations=[{"operator": "Exists"}]))
    p = get_pod(cluster, "p")
    assert p["spec"]["schedulerName"] == "mine"
    assert p["spec"]["terminationGracePeriodSeconds"] == 5
    assert p["spec"]["tolerations"] == [{"operator": "Exists"}]


def test_requests_default_from_limits_and_qos(cluster):
    guaranteed = pod("g")
    guaranteed["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "memory": "1Gi"}}
    cluster.create(guaranteed)
    p = get_pod(cluster, "g")
    assert p["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert p["status"]["qosClass"] == "Guaranteed"
    cluster.create(pod("b"))
    assert get_pod(cluster, "b")["status"]["qosClass"] == "BestEffort"


def test_gated_pod_gets_scheduling_gated_condition(cluster):
    cluster.create(pod("p", schedulingGates=[{"name": "example.com/gate"}]))
    conditions = get_pod(cluster, "p")["status"]["conditions"]
    assert conditions == [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
        }
    ]


def test_duplicate_pod_already_exists(cluster):
    cluster.create(pod("p"))
    assert cluster.create(pod("p")) is None
    rej = last_rejection(cluster)
    assert (rej["code"], rej["message"]) == (409, 'pods "p" already exists')


def test_admission_leaves_input_untouched():
    cluster = make_cluster(controllers=False)
    obj = pod("p")
    out = cluster.api.admission.admit_create(obj, 0.0)
    assert "priority" not in obj["spec"] and out["spec"]["priority"] == 0
