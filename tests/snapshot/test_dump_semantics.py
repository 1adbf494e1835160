"""A `kubectl get -o yaml` dump describes objects that already exist: they are restored, not re-created."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kubesched.api.loader import Step, load_scenario
from kubesched.k8s.timefmt import parse_rfc3339
from kubesched.sim import Simulation, simulate
from kubesched.testkit.dumps.cluster import ClusterDump


def _cluster(with_pending: bool = True) -> ClusterDump:
    dump = ClusterDump()
    for i, zone in enumerate(("zone-a", "zone-a", "zone-b")):
        dump.node(f"node-{i}", cpu="4", memory="16Gi", zone=zone)
    dump.daemonset_pods("node-agent")
    dump.system_classes()
    dump.priority_class("online", 100000)
    dump.priority_class("batch", 100, preemption_policy="Never")
    web, _, _ = dump.deployment("web", 3, ["node-0", "node-1", "node-2"], namespace="shop", cpu="1",
                                priority_class="online", priority=100000)
    dump.deployment("reports", 2, ["node-0", None] if with_pending else ["node-0", "node-1"], namespace="batch",
                    cpu="500m", priority_class="batch", priority=100)
    dump.pdb("web", "shop", {"app": "web"}, min_available=2, allowed=0, healthy=3, expected=3)
    return dump


def _write(tmp_path: Path, doc: Any, name: str = "snap.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_pods_before_their_classes_are_restored_with_their_priorities(tmp_path: Path) -> None:
    dump = _cluster()
    result = simulate(_write(tmp_path, dump.as_list())).result
    assert result["rejected"] == []  # neither the pods (before their classes) nor the system classes
    pods = result["pods"]
    assert len(pods) == len(dump.pods)
    web = [p for k, p in pods.items() if k.startswith("shop/web-")]
    assert [p["priority"] for p in web] == [100000] * 3
    assert {p["node"] for p in web} == {"node-0", "node-1", "node-2"}
    assert all(p["phase"] == "Running" for p in web)
    agents = [p for k, p in pods.items() if k.startswith("kube-system/node-agent-")]
    assert [p["priority"] for p in agents] == [2000001000] * 3


def test_running_pods_start_at_time_zero_and_the_pending_one_is_scheduled(tmp_path: Path) -> None:
    dump = _cluster()
    result = simulate(_write(tmp_path, dump.as_list())).result
    started = {e["pod"]: e for e in result["events"] if e["reason"] == "Started"}
    running = [p for p in dump.pods if p["spec"].get("nodeName")]
    for pod in running:
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        assert started[key]["time"] == 0
        assert started[key]["node"] == pod["spec"]["nodeName"]
    pending = next(p for p in dump.pods if not p["spec"].get("nodeName"))
    key = f"batch/{pending['metadata']['name']}"
    assert result["pods"][key]["phase"] == "Running"
    assert any(e["reason"] == "Scheduled" and e["pod"] == key for e in result["events"])
    assert result["summary"]["scheduled"] == 1
    assert result["snapshot"]["restored"]["Pod"] == len(dump.pods)
    # the dump's latest timestamp: the nodes' last heartbeat, a minute before it was taken
    assert result["snapshot"]["takenAt"] == "2026-11-20T09:29:00Z"


def test_controllers_in_the_dump_adopt_their_replica_sets_and_pods(tmp_path: Path) -> None:
    dump = _cluster(with_pending=False)
    result = simulate(_write(tmp_path, dump.as_list(with_workloads=True))).result
    assert set(result["pods"]) == {f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in dump.pods}
    assert not [e for e in result["events"] if e["reason"] in ("Deleted", "Terminating", "Scheduled")]


def test_the_order_of_a_dump_does_not_matter(tmp_path: Path) -> None:
    dump = _cluster()
    listed = dump.as_list(with_workloads=True)
    reordered = {**listed, "items": list(reversed(listed["items"]))}
    a = simulate(_write(tmp_path, listed, "a.yaml")).result
    b = simulate(_write(tmp_path, reordered, "b.yaml")).result
    assert a["pods"] == b["pods"] and a["events"] == b["events"]


def test_a_pod_whose_replica_set_is_absent_is_replaced_when_it_goes(tmp_path: Path) -> None:
    dump = _cluster(with_pending=False)
    scenario = load_scenario(_write(tmp_path, dump.as_list()))  # no deploy/rs in the dump
    victim = next(p for p in dump.pods if p["metadata"]["name"].startswith("web-"))
    scenario.steps.append(Step(at=10.0, action="delete", kind="Pod", name=victim["metadata"]["name"],
                               namespace="shop"))
    result = simulate(scenario).result
    assert any("ReplicaSet shop/web-" in note and "stands in" in note for note in result["snapshot"]["notes"])
    web = {k: p for k, p in result["pods"].items() if k.startswith("shop/web-")}
    assert web[f"shop/{victim['metadata']['name']}"]["phase"] == "Deleted"
    replacements = [k for k in web if k not in {f"shop/{p['metadata']['name']}" for p in dump.pods}]
    assert len(replacements) == 1
    assert web[replacements[0]]["phase"] == "Running"
    assert web[replacements[0]]["priority"] == 100000


def test_a_dumped_pdb_status_is_recomputed_from_the_pods(tmp_path: Path) -> None:
    dump = _cluster()  # the dump says disruptionsAllowed 0; 3 healthy web pods, minAvailable 2 allow 1
    sim = Simulation(load_scenario(_write(tmp_path, dump.as_list())))
    sim.run()
    pdb = sim.cluster.get("PodDisruptionBudget", "shop", "web")
    assert pdb is not None
    assert pdb["status"]["disruptionsAllowed"] == 1
    assert pdb["status"]["currentHealthy"] == 3


def test_restored_objects_are_older_than_anything_the_simulation_makes(tmp_path: Path) -> None:
    dump = _cluster()
    sim = Simulation(load_scenario(_write(tmp_path, dump.as_list())))
    sim.run()
    for pod in sim.cluster.list("Pod"):
        assert parse_rfc3339(pod["metadata"]["creationTimestamp"]) <= 0
        assert parse_rfc3339(pod["status"]["startTime"]) <= sim.loop.now()
    node = sim.cluster.get("Node", None, "node-0")
    assert node is not None and parse_rfc3339(node["metadata"]["creationTimestamp"]) < 0


def test_a_pod_terminating_in_the_dump_goes_when_its_grace_period_ends(tmp_path: Path) -> None:
    dump = _cluster(with_pending=False)
    pod = next(p for p in dump.pods if p["metadata"]["name"].startswith("reports-"))
    # deleted 10 s before the dump's last heartbeat, with the default 30 s grace period: 20 s left
    pod["metadata"]["deletionTimestamp"] = "2026-11-20T09:29:20Z"
    pod["metadata"]["deletionGracePeriodSeconds"] = 30
    result = simulate(_write(tmp_path, dump.as_list(with_workloads=True))).result
    key = f"batch/{pod['metadata']['name']}"
    assert [(e["time"], e["reason"]) for e in result["events"] if e["pod"] == key] == [
        (0.0, "Created"), (0.0, "Started"), (20.0, "Deleted")]
    replacement = [k for k in result["pods"] if k.startswith("batch/reports-") and k != key
                   and k not in {f"batch/{p['metadata']['name']}" for p in dump.pods}]
    assert len(replacement) == 1  # its ReplicaSet (in the dump) replaces it


def test_kinds_kubesched_does_not_simulate_are_left_out_of_a_dump_with_a_warning(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kubesched.cli.main import cli

    dump = _cluster()
    listed = dump.as_list()
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly", "namespace": "batch",
                                                                      "uid": "c0ffee00-0000-4000-8000-000000000001",
                                                                      "resourceVersion": "4711"},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}}}
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "web", "namespace": "shop", "uid": "c0ffee00-0000-4000-8000-000000000002",
                        "creationTimestamp": "2026-11-20T08:00:00Z"},
           "spec": {"maxReplicas": 5, "scaleTargetRef": {"kind": "Deployment", "name": "web"}}}
    path = _write(tmp_path, {**listed, "items": [*listed["items"], cron, hpa]})
    out = CliRunner().invoke(cli, ["simulate", str(path), "-o", "json"])
    assert out.exit_code == 0, out.output
    assert "warning:" in out.stderr and "kind CronJob is not simulated: 1 object(s)" in out.stderr
    assert "kind HorizontalPodAutoscaler is not simulated" in out.stderr
    hand_written = tmp_path / "hand.yaml"
    hand_written.write_text(yaml.safe_dump({**cron, "metadata": {"name": "nightly", "uid": "pinned"}}))
    refused = CliRunner().invoke(cli, ["simulate", str(hand_written)])
    assert refused.exit_code == 2 and 'unsupported kind "CronJob"' in refused.stderr


def test_a_hand_written_manifest_that_pins_a_uid_is_still_created_in_file_order(tmp_path: Path) -> None:
    from kubesched.testkit.builders import make_node, make_pod, make_priority_class

    docs = [make_node("n1", cpu="1"), make_pod("late", cpu="1", uid="u-1", priority_class="high"),
            make_priority_class("high", 1000)]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    result = simulate(path).result
    # created through admission in file order: the pod naming a class not created yet is refused
    assert [r["name"] for r in result["rejected"]] == ["default/late"]
    assert "snapshot" not in result


def test_the_result_states_the_cluster_as_read(tmp_path: Path) -> None:
    dump = _cluster()
    dump.node("node-3", cpu="4", zone="zone-b", unschedulable=True)
    leaving = dump.pod("old-report", "batch", node="node-0", priority_class="batch", priority=100)
    leaving["metadata"]["deletionTimestamp"] = leaving["metadata"]["creationTimestamp"]
    dump.pod("done", "batch", node="node-1", phase="Succeeded")
    dump.pod("queued", "batch", node=None, priority_class="batch", priority=100)
    as_read = simulate(_write(tmp_path, dump.as_list())).result["snapshot"]["asRead"]
    assert (as_read["nodes"], as_read["cordonedNodes"], as_read["notReadyNodes"]) == (4, 1, 0)
    # 3 agents + 3 web + 1 report running, 2 pending (a report replica and the bare pod)
    assert as_read["pods"] == {"running": 7, "starting": 0, "pending": 2, "terminating": 1, "succeeded": 1,
                               "failed": 0}
    assert as_read["podsByNamespace"]["batch"] == {"running": 1, "starting": 0, "pending": 2, "terminating": 1,
                                                   "succeeded": 1, "failed": 0}
    assert as_read["podsByPriorityClass"]["online"]["running"] == 3
    assert as_read["podsByPriorityClass"][""]["succeeded"] == 1


def test_the_table_output_states_the_cluster_as_read_and_tabulates_it_when_asked(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kubesched.cli.main import cli

    path = _write(tmp_path, _cluster().as_list())
    out = CliRunner().invoke(cli, ["simulate", str(path), "--as-read", "namespace", "--as-read", "class"])
    assert out.exit_code == 0, out.output
    assert "cluster as read: 3 nodes; 8 pods: 7 running, 1 pending" in out.output
    assert "Pods as read, by namespace" in out.output and "Pods as read, by PriorityClass" in out.output
    plain = CliRunner().invoke(cli, ["simulate", str(path)])
    assert "cluster as read: 3 nodes" in plain.output and "Pods as read" not in plain.output


def _times_by_walking_everything(value: Any, found: list[tuple[int, str, float]]) -> None:
    """The plain recursive reading of "every time field": the reference the fast walk is held to."""
    from kubesched.api.snapshot import _TIME_FIELDS, _seconds

    if isinstance(value, dict):
        for key, item in value.items():
            if key in _TIME_FIELDS and isinstance(item, str):
                seconds = _seconds(item)
                if seconds is not None:
                    found.append((id(value), key, seconds))
            else:
                _times_by_walking_everything(item, found)
    elif isinstance(value, list):
        for item in value:
            _times_by_walking_everything(item, found)


def test_the_timestamp_walk_finds_what_walking_everything_finds() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from kubesched.api.snapshot import _TimeFields

    keys = st.sampled_from(["creationTimestamp", "startTime", "startedAt", "name", "status", "items", "x"])
    leaves = st.one_of(st.sampled_from(["2026-11-20T09:00:00Z", "2026-11-19T10:11:12Z", "not a time", ""]),
                       st.integers(), st.none(), st.booleans())
    trees = st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(keys, inner, max_size=5)), max_leaves=30)

    @settings(max_examples=300, deadline=None)
    @given(trees)
    def check(tree: Any) -> None:
        expected: list[tuple[int, str, float]] = []
        _times_by_walking_everything(tree, expected)
        times = _TimeFields()
        times.collect(tree)
        assert sorted((id(o), k, times.seconds[t]) for o, k, t in times.found) == sorted(expected)

    check()


def test_the_time_walk_shifts_every_timestamp_a_pod_declares_and_nothing_else() -> None:
    from kubesched.api.snapshot import _TimeFields

    at = "2026-11-20T09:00:00Z"
    pod: dict[str, Any] = {
        "kind": "Pod",
        "metadata": {"creationTimestamp": "2026-11-20T08:00:00Z", "annotations": {"startTime": at}},
        "spec": {"containers": [{"name": "app", "env": [{"name": "startedAt", "value": at}]}],
                 "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                     "metadata": {"creationTimestamp": "2026-11-20T08:30:00Z"}, "spec": {}}}}]},
        "status": {"startTime": "2026-11-20T08:00:01Z",
                   "conditions": [{"type": "Ready", "lastTransitionTime": "2026-11-20T08:00:05Z"}],
                   "containerStatuses": [{"name": "app", "state": {"running": {"startedAt": at}},
                                          "lastState": {"terminated": {"startedAt": "2026-11-20T07:00:00Z",
                                                                       "finishedAt": "2026-11-20T07:59:00Z"}}}]},
    }
    times = _TimeFields()
    times.collect_object(pod)
    times.shift(times.latest())
    status = pod["status"]
    assert pod["metadata"]["creationTimestamp"] == "2025-12-31T23:00:00Z"
    assert status["startTime"] == "2025-12-31T23:00:01Z"
    assert status["conditions"][0]["lastTransitionTime"] == "2025-12-31T23:00:05Z"
    assert status["containerStatuses"][0]["state"]["running"]["startedAt"] == "2026-01-01T00:00:00Z"
    assert status["containerStatuses"][0]["lastState"]["terminated"]["finishedAt"] == "2025-12-31T22:59:00Z"
    claim = pod["spec"]["volumes"][0]["ephemeral"]["volumeClaimTemplate"]
    assert claim["metadata"]["creationTimestamp"] == "2025-12-31T23:30:00Z"
    # texts that only look like timestamps under a time field's name: an annotation, an env var
    assert pod["metadata"]["annotations"]["startTime"] == at
    assert pod["spec"]["containers"][0]["env"][0]["value"] == at


def test_a_pod_bound_to_a_node_missing_from_the_dump_is_named_in_a_warning_and_collected(tmp_path: Path) -> None:
    """A dump taken just after a node was scaled away still lists the pods bound to it. Kubernetes
    keeps them bound (no scheduler sees them pending) until the pod garbage collector deletes them;
    kubesched simulates that as it is and says so on stderr, naming the pod and the node, with or
    without --strict (the API server accepts such a pod)."""
    from click.testing import CliRunner

    from kubesched.cli.main import cli

    gone = "ip-10-0-3-77.eu-west-1.compute.internal"
    dump = ClusterDump()
    for i, zone in enumerate(("eu-west-1a", "eu-west-1b")):
        dump.node(f"ip-10-0-{i + 1}-23.eu-west-1.compute.internal", cpu="4", memory="16Gi", zone=zone,
                  instance_type="m5.xlarge", region="eu-west-1")
    _, _, pods = dump.deployment("web", 3, ["ip-10-0-1-23.eu-west-1.compute.internal",
                                            "ip-10-0-2-23.eu-west-1.compute.internal", gone],
                                 namespace="shop", cpu="500m")
    dump.sort()
    orphan = pods[2]["metadata"]["name"]
    index = next(i for i, item in enumerate(dump.items(with_workloads=True))
                 if item["kind"] == "Pod" and item["metadata"]["name"] == orphan)
    path = dump.write(tmp_path / "snap.yaml")
    warning = (f"warning: {path}: document 1 (Pod shop/{orphan}): items[{index}].spec.nodeName: "
               f'node "{gone}" does not exist: the pod is bound to it, so no scheduler places it, and the pod '
               "garbage collector deletes it once the node has been missing for 40 s")
    outputs = []
    for strict in ([], ["--strict"]):
        out = CliRunner().invoke(cli, ["simulate", str(path), "-o", "json", *strict])
        assert out.exit_code == 0, out.output
        assert out.stderr.splitlines() == [warning]
        outputs.append(out.stdout)
    assert outputs[0] == outputs[1]
    result = simulate(path).result
    # as before the warning: the collector's pass at 20 s finds the node missing, the one at 60 s deletes
    assert [(e["time"], e["reason"]) for e in result["events"] if e["pod"] == f"shop/{orphan}"][-1] == (60.0, "Deleted")
    replaced = [k for k in result["pods"] if k.startswith("shop/web-") and k not in
                {f"shop/{p['metadata']['name']}" for p in pods}]
    assert len(replaced) == 1 and result["pods"][replaced[0]]["node"] in {n["metadata"]["name"] for n in dump.nodes}
