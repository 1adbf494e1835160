"""explain and whatif on a live cluster, read through a kubeconfig (GET requests only)."""

from __future__ import annotations

import json

from click.testing import CliRunner
from fakeapi import FakeApiServer

from conftest import pod
from kubesched.cli.main import cli
from kubesched.testkit.builders import make_node, make_priority_class


def _cluster(fake: FakeApiServer) -> None:
    fake.create(make_priority_class("low", 100))
    fake.create(make_priority_class("high", 1000))
    fake.create(make_node("n1", cpu="4"))
    bound = pod("batch", "3", scheduler_name="default-scheduler", priority_class="low")
    bound["spec"]["nodeName"] = "n1"
    bound["spec"]["priority"] = 100
    bound["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    fake.create(bound)
    pending = pod("api", "2", scheduler_name="default-scheduler", priority_class="high")
    pending["spec"]["priority"] = 1000
    fake.create(pending)


def test_explain_reads_a_live_cluster(fake: FakeApiServer, kubeconfig: str) -> None:
    _cluster(fake)
    before = fake.store.resource_version
    result = CliRunner().invoke(cli, ["explain", "api", "--kubeconfig", kubeconfig, "--at", "0s", "-o", "json"])
    assert result.exit_code == 0, result.output
    diagnosis = json.loads(result.output)
    assert diagnosis["pod"] == "default/api"
    assert fake.store.resource_version == before  # read-only: nothing written to the cluster


def test_whatif_on_a_live_cluster_predicts_the_preemption(fake: FakeApiServer, kubeconfig: str) -> None:
    _cluster(fake)
    result = CliRunner().invoke(cli, ["whatif", "--kubeconfig", kubeconfig, "--disable-preemption", "-o", "json"])
    assert result.exit_code == 0, result.output
    diff = json.loads(result.output)
    assert {p["victim"] for p in diff["noLongerPreempted"]} == {"default/batch"}
    # api was pending in the cluster: it starts in the baseline only, it does not stop
    assert diff["stopped"] == []
    assert [(p["pod"], p["phaseAfter"]) for p in diff["notStarted"]] == [("default/api", "Pending")]
    # the victim of the baseline is not a pod that "would start": it keeps running
    assert [p["pod"] for p in diff["keptRunning"]] == ["default/batch"] and diff["started"] == []


def test_snapshot_and_kubeconfig_together_are_refused(kubeconfig: str, tmp_path) -> None:
    snap = tmp_path / "s.yaml"
    snap.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: 1}}\n")
    result = CliRunner().invoke(cli, ["whatif", str(snap), "--kubeconfig", kubeconfig])
    assert result.exit_code == 2
    assert "either SNAPSHOT or --kubeconfig" in result.output


def _workloads(fake: FakeApiServer) -> None:
    from kubesched.testkit.builders import make_deployment, make_pod

    _cluster(fake)
    web = make_deployment("web", 2, make_pod("web", cpu="500m"))
    web["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "PASSWORD", "value": "hunter2"}, {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    web["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": '{"env": "hunter2"}'}
    fake.create(web)
    for i in range(3):
        fake.create(make_pod(f"many-{i}", cpu="10m", namespace="default"))


def test_snapshot_writes_a_kubectl_list_without_configuration_values(fake: FakeApiServer, kubeconfig: str,
                                                                      tmp_path) -> None:
    import yaml

    _workloads(fake)
    out = tmp_path / "snap.yaml"
    result = CliRunner().invoke(cli, ["snapshot", "--kubeconfig", kubeconfig, "-o", str(out)])
    assert result.exit_code == 0, result.output
    doc = yaml.safe_load(out.read_text())
    assert (doc["apiVersion"], doc["kind"]) == ("v1", "List")
    kinds = [i["kind"] for i in doc["items"]]
    assert kinds.index("Namespace") < kinds.index("PriorityClass") < kinds.index("Node") < kinds.index("Pod")
    assert "Deployment" in kinds
    assert all(i["metadata"].get("uid") for i in doc["items"])  # restored as existing objects
    text = out.read_text()
    assert "hunter2" not in text and "managedFields" not in text and "secretKeyRef" in text
    # only GET requests, with pagination for big lists
    assert {r.method for r in fake.requests} == {"GET"}
    # the file is a snapshot the other commands take
    again = CliRunner().invoke(cli, ["whatif", str(out), "--disable-preemption", "-o", "json"])
    assert again.exit_code == 0, again.output
    diff = json.loads(again.output)
    assert diff["changed"]["snapshot"]["restored"]["Deployment"] == 1


def test_a_resource_the_credentials_cannot_list_is_left_out_with_a_warning(fake: FakeApiServer, kubeconfig: str,
                                                                            tmp_path) -> None:
    from fakefaults import Fault

    _workloads(fake)
    fake.inject(Fault(method="GET", path="/apis/apps/v1/deployments", status=403, times=-1))
    out = tmp_path / "snap.yaml"
    result = CliRunner().invoke(cli, ["snapshot", "--kubeconfig", kubeconfig, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "cannot list deployments" in result.stderr and "grant verb list on resource deployments" in result.stderr
    assert "kind: Deployment" not in out.read_text()


def test_snapshot_errors_write_nothing(fake: FakeApiServer, kubeconfig: str, tmp_path) -> None:
    from fakefaults import Fault

    _cluster(fake)
    fake.inject(Fault(method="GET", path="/api/v1/nodes", status=500, times=-1))
    out = tmp_path / "snap.yaml"
    result = CliRunner().invoke(cli, ["snapshot", "--kubeconfig", kubeconfig, "-o", str(out)])
    assert result.exit_code == 2 and "reading the cluster failed" in result.stderr
    assert not out.exists() and not list(tmp_path.glob(".snap.yaml.*"))
