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
    assert [(p["pod"], p["phaseAfter"]) for p in diff["stopped"]] == [("default/api", "Pending")]
    # the victim of the baseline is not a pod that "would start": it keeps running
    assert [p["pod"] for p in diff["keptRunning"]] == ["default/batch"] and diff["started"] == []


def test_snapshot_and_kubeconfig_together_are_refused(kubeconfig: str, tmp_path) -> None:
    snap = tmp_path / "s.yaml"
    snap.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: 1}}\n")
    result = CliRunner().invoke(cli, ["whatif", str(snap), "--kubeconfig", kubeconfig])
    assert result.exit_code == 2
    assert "either SNAPSHOT or --kubeconfig" in result.output
