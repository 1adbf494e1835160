"""Pods with PersistentVolumeClaims in the simulator: the default profile's volume plugins
(VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits) with the embedded
PersistentVolume controller and provisioners, checked on what a user sees — where pods land, the
FailedScheduling texts, claims' and volumes' final state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesched.testkit.builders import (
    make_csinode,
    make_node,
    make_pod,
    make_priority_class,
    make_pv,
    make_pvc,
    make_statefulset,
    make_storage_class,
    with_claims,
)
from kubesched.testkit.runs import ScenarioRun, run_docs
from kubesched.testkit.scenarios import create_step, delete_step, scenario_document

ZONE = "topology.kubernetes.io/zone"


def zonal_nodes(*names_zones: tuple[str, str], cpu: str = "4") -> list[dict[str, Any]]:
    return [make_node(name, cpu=cpu, labels={ZONE: zone}) for name, zone in names_zones]


def claim(run: ScenarioRun, name: str, namespace: str = "default") -> dict[str, Any]:
    obj = run.sim.cluster.api.get("PersistentVolumeClaim", namespace, name)
    assert obj is not None, name
    return obj


def volume(run: ScenarioRun, name: str) -> dict[str, Any]:
    obj = run.sim.cluster.api.get("PersistentVolume", None, name)
    assert obj is not None, name
    return obj


def test_a_pod_goes_where_its_bound_volume_is(tmp_path: Path) -> None:
    """A claim bound (by the PV controller, Immediate class) to a volume in zone b: the pod can only
    run in zone b, whatever the scores say; when zone b is full it waits with upstream's message."""
    run = run_docs(tmp_path, [
        scenario_document(until="1m"),
        zonal_nodes(("a1", "a"), ("a2", "a"), ("b1", "b")),
        make_storage_class("zonal", wait=False),
        make_pv("disk-b", zone="b", storage_class="zonal"),
        make_pvc("data", storage_class="zonal"),
        make_pod("hog", cpu="3500m", node="b1"),
        with_claims(make_pod("db", cpu="1"), "data"),
    ])
    assert claim(run, "data")["spec"]["volumeName"] == "disk-b"
    assert volume(run, "disk-b")["status"]["phase"] == "Bound"
    assert run.node_of("db") is None
    assert run.messages("db")[0] == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had volume node affinity conflict. preemption: "
        "0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful "
        "for scheduling..")


def test_volume_zone_labels_keep_the_pod_in_the_volumes_zone(tmp_path: Path) -> None:
    run = run_docs(tmp_path, [
        scenario_document(until="1m"),
        zonal_nodes(("a1", "a"), ("b1", "b")),
        make_node("nozone"),
        make_pv("legacy", zone="b", zone_label=True, storage_class=""),
        make_pvc("data", storage_class="", volume="legacy"),
        with_claims(make_pod("app", cpu="1"), "data"),
        make_pod("fill-b1", cpu="3", node="b1"),
        make_pod("fill-nozone", cpu="4", node="nozone"),
        with_claims(make_pod("late", cpu="1"), "data"),
    ])
    assert run.node_of("app") in ("b1", "nozone")  # a node without zone labels is not constrained
    assert run.messages("late")[0].startswith(
        "0/3 nodes are available: 1 node(s) had no available volume zone, 2 Insufficient cpu.")


def test_a_missing_claim_keeps_the_pod_pending_until_it_is_created(tmp_path: Path) -> None:
    run = run_docs(tmp_path, [
        scenario_document(steps=[create_step("30s", make_pvc("data", storage_class="", volume="pv-1"))],
                          until="2m"),
        make_node("n1"),
        make_pv("pv-1", storage_class=""),
        with_claims(make_pod("app"), "data"),
    ])
    assert run.messages("app")[0] == (
        '0/1 nodes are available: persistentvolumeclaim "data" not found. preemption: 0/1 nodes are available: '
        "1 Preemption is not helpful for scheduling..")
    # the claim's creation (a PersistentVolumeClaim/Add event) requeues the pod at once
    assert run.scheduled("app")[0][1] == "n1"
    assert 30 <= run.scheduled("app")[0][0] < 32


def test_an_unbound_immediate_claim_waits_for_the_pv_controller(tmp_path: Path) -> None:
    """No volume, no provisioner: the claim stays Pending and the pod unschedulable; a volume created
    later is bound by the PV controller and the pod follows."""
    run = run_docs(tmp_path, [
        scenario_document(steps=[create_step("1m", make_pv("late", storage_class="manual"))], until="3m"),
        make_node("n1"),
        make_storage_class("manual", provisioner="kubernetes.io/no-provisioner", wait=False),
        make_pvc("data", storage_class="manual"),
        with_claims(make_pod("app"), "data"),
    ])
    assert run.messages("app")[0].startswith("0/1 nodes are available: pod has unbound immediate "
                                             "PersistentVolumeClaims.")
    assert [e["message"] for e in run.ev("FailedBinding", "PersistentVolumeClaim/default/data")] == [
        "no volume plugin matched name: kubernetes.io/no-provisioner"]
    assert claim(run, "data")["spec"]["volumeName"] == "late"
    assert run.node_of("app") == "n1"
    assert run.scheduled("app")[0][0] >= 60


def test_local_volumes_spread_pods_and_the_last_one_waits(tmp_path: Path) -> None:
    """WaitForFirstConsumer local volumes, one per node: the scheduler picks volume and node
    together, binds the volume in PreBind (about a second later the pod is bound), and a third pod
    finds none left."""
    run = run_docs(tmp_path, [
        scenario_document(until="1m"),
        make_node("n1"), make_node("n2"),
        make_storage_class("local", provisioner="kubernetes.io/no-provisioner"),
        make_pv("local-n1", node="n1"), make_pv("local-n2", node="n2"),
        *(make_pvc(f"data-{i}") for i in range(3)),
        *(with_claims(make_pod(f"db-{i}"), f"data-{i}") for i in range(3)),
    ])
    placed = {run.node_of("db-0"), run.node_of("db-1")}
    assert placed == {"n1", "n2"}
    for i in range(2):
        bound_to = claim(run, f"data-{i}")["spec"]["volumeName"]
        assert bound_to == f"local-{run.node_of(f'db-{i}')}"
        assert claim(run, f"data-{i}")["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
        assert run.scheduled(f"db-{i}")[0][0] == 1.0  # PreBind's first poll, one second after the cycle
    assert run.node_of("db-2") is None
    assert run.messages("db-2")[-1].startswith(
        "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind.")


def test_statefulset_claims_are_provisioned_in_the_zone_of_the_chosen_node(tmp_path: Path) -> None:
    """volumeClaimTemplates make one claim per replica; WaitForFirstConsumer provisioning pins each
    volume to its pod's zone (the CSINode's topology keys), so a recreated pod returns to that zone."""
    sts = make_statefulset("db", 3, make_pod("db", cpu="1"), podManagementPolicy="Parallel",
                           volumeClaimTemplates=[{"metadata": {"name": "data"}, "spec": {
                               "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}}}])
    nodes = zonal_nodes(("a1", "a"), ("b1", "b"), ("c1", "c"))
    run = run_docs(tmp_path, [
        scenario_document({"storage": {"provisioners": {"ebs.csi.aws.com": {"delay": "4s"}}}},
                          steps=[delete_step("2m", "Pod", "db-1", grace=0)], until="5m"),
        nodes,
        *(make_csinode(n["metadata"]["name"], topology_keys=[ZONE]) for n in nodes),
        make_storage_class("gp3", default=True),
        sts,
    ])
    zone_of = {n["metadata"]["name"]: n["metadata"]["labels"][ZONE] for n in nodes}
    for i in range(3):
        c = claim(run, f"data-db-{i}")
        assert c["spec"]["storageClassName"] == "gp3"  # the default class, set by admission
        node = c["metadata"]["annotations"]["volume.kubernetes.io/selected-node"]
        pv = volume(run, c["spec"]["volumeName"])
        term = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
        assert term["matchExpressions"] == [{"key": ZONE, "operator": "In", "values": [zone_of[node]]}]
        assert run.node_of(f"db-{i}") is not None and zone_of[run.node_of(f"db-{i}")] == zone_of[node]
    first = [t for t, _ in run.scheduled("db-0")][0]
    assert first == 4.0  # provisioned after 4 s, seen by the next poll
    assert [n for _, n in run.scheduled("db-1")][0] == [n for _, n in run.scheduled("db-1")][-1]
    assert len(run.ev("ProvisioningSucceeded")) == 3


def test_read_write_once_pod_claims_have_one_user_and_preemption_frees_them(tmp_path: Path) -> None:
    rwop = make_pvc("exclusive", storage_class="", access_modes=["ReadWriteOncePod"], volume="pv-1")
    run = run_docs(tmp_path, [
        scenario_document(steps=[create_step("10s", with_claims(make_pod("second"), "exclusive")),
                                 create_step("20s", with_claims(make_pod("urgent", priority_class="high"),
                                                                "exclusive"))],
                          until="2m"),
        make_priority_class("high", 1000),
        make_node("n1"), make_node("n2"),
        make_pv("pv-1", storage_class="", access_modes=["ReadWriteOncePod"]),
        rwop,
        with_claims(make_pod("first"), "exclusive"),
    ])
    message = ("0/2 nodes are available: 2 node has pod using PersistentVolumeClaim with the same name and "
               "ReadWriteOncePod access mode.")
    assert run.messages("second")[0].startswith(message)
    assert run.node_of("second") is None
    first_node = run.scheduled("first")[0][1]
    assert ("first" in run.victims()) and run.node_of("urgent") == first_node


def test_csi_attach_limits_count_distinct_volumes(tmp_path: Path) -> None:
    run = run_docs(tmp_path, [
        scenario_document(until="1m"),
        make_node("n1", labels={ZONE: "a"}),
        make_csinode("n1", count=2),
        make_storage_class("gp3", wait=False),
        *(make_pv(f"pv-{i}", zone="a", storage_class="gp3") for i in range(3)),
        *(make_pvc(f"c-{i}", storage_class="gp3", volume=f"pv-{i}") for i in range(3)),
        with_claims(make_pod("two"), "c-0", "c-1"),
        with_claims(make_pod("shares"), "c-0"),
        with_claims(make_pod("third"), "c-2"),
    ])
    assert run.node_of("two") == "n1" and run.node_of("shares") == "n1"  # c-0 is attached already
    assert run.node_of("third") is None
    assert run.messages("third")[0].startswith("0/1 nodes are available: 1 node(s) exceed max volume count.")


def test_failed_provisioning_sends_the_pod_back_to_the_scheduler(tmp_path: Path) -> None:
    run = run_docs(tmp_path, [
        scenario_document({"storage": {"provisioners": {"*": {"failureRate": 1}}}}, until="20s"),
        make_node("n1"),
        make_storage_class("gp3"),
        make_pvc("data", storage_class="gp3"),
        with_claims(make_pod("app"), "data"),
    ])
    assert run.node_of("app") is None
    errors = [m for _, m in run.failed("app")]
    assert errors[0] == ('running PreBind plugin "VolumeBinding": binding volumes: provisioning failed for PVC '
                         '"data"')
    assert len(errors) >= 2  # tried again after backoff, failed again
    assert run.ev("ProvisioningFailed", "PersistentVolumeClaim/default/data")
    assert "volume.kubernetes.io/selected-node" not in (claim(run, "data")["metadata"].get("annotations") or {})


def test_a_pod_deleted_while_its_volumes_bind_is_not_lost_track_of(tmp_path: Path) -> None:
    run = run_docs(tmp_path, [
        scenario_document({"storage": {"provisioners": {"*": {"delay": "30s"}}}},
                          steps=[delete_step("10s", "Pod", "app", grace=0)], until="1m"),
        make_node("n1"),
        make_storage_class("gp3"),
        make_pvc("data", storage_class="gp3"),
        with_claims(make_pod("app"), "data"),
    ])
    assert run.phase("app") == "Deleted"
    assert run.scheduled("app") == []
    assert all(not info.pods for info in run.sim.scheduler.cache.nodes.values())  # nothing stays assumed
