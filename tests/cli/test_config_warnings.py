"""What the commands say of a configuration whose profiles serve none of the pods (simulate warns
on stderr), and of a what-if whose applied objects admission refuses (whatif lists them, in its
table and in the WhatIfResult's ``rejected``)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubesched.cli.main import cli

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo.yaml")
MY_SCHEDULER = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: my-scheduler
"""
#: a pod naming a PriorityClass the cluster has not: the API server's Priority admission refuses it
UNKNOWN_CLASS_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: urgent, namespace: default}
spec:
  priorityClassName: does-not-exist
  containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]
"""
UNSERVED = ("warning: 24 pods ask for a scheduler no profile of this configuration provides: default-scheduler "
            "(its profiles: my-scheduler); they stay pending")


def test_simulate_warns_of_pods_no_profile_schedules(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(MY_SCHEDULER)
    out = CliRunner().invoke(cli, ["simulate", DEMO, "--scheduler-config", str(config), "-o", "json"])
    assert out.exit_code == 0, out.output
    assert UNSERVED in out.stderr.splitlines()
    assert json.loads(out.stdout)["summary"]["pending"] == 24  # refused nothing: the run is the run
    # a pod of a profile the configuration has is no matter for a warning
    served = tmp_path / "both.yaml"
    served.write_text(MY_SCHEDULER + "- schedulerName: default-scheduler\n")
    out = CliRunner().invoke(cli, ["simulate", DEMO, "--scheduler-config", str(served), "-o", "json"])
    assert out.exit_code == 0 and "no profile" not in out.stderr


def test_simulate_says_nothing_when_every_pod_has_its_scheduler() -> None:
    out = CliRunner().invoke(cli, ["simulate", DEMO, "-o", "json"])
    assert out.exit_code == 0 and out.stderr == ""


def test_whatif_lists_what_admission_refused(tmp_path: Path) -> None:
    pod = tmp_path / "pod.yaml"
    pod.write_text(UNKNOWN_CLASS_POD)
    out = CliRunner().invoke(cli, ["whatif", DEMO, "--apply", str(pod), "-o", "json"])
    assert out.exit_code == 0, out.output
    diff = json.loads(out.stdout)
    why = 'pods "urgent" is forbidden: no PriorityClass with name does-not-exist was found'
    assert diff["rejected"] == [{"time": 0.0, "kind": "Pod", "name": "urgent", "namespace": "default", "code": 403,
                                 "reason": why}]
    assert diff["summary"]["rejected"] == 1
    table = CliRunner().invoke(cli, ["whatif", DEMO, "--apply", str(pod)], env={"COLUMNS": "250"})
    assert table.exit_code == 0, table.output
    assert "made no difference" not in table.stdout
    assert "Note: admission refused 1 of the objects the changes create (below)" in table.stdout
    assert "Refused by admission in the changed run (1)" in table.stdout
    assert why in table.stdout


def test_a_refusal_the_baseline_has_too_is_no_difference(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(Path(DEMO).read_text() + "\n---\n" + UNKNOWN_CLASS_POD)
    cordon = CliRunner().invoke(cli, ["whatif", str(scenario), "--cordon", "node-1", "-o", "json"])
    assert cordon.exit_code == 0, cordon.output
    diff = json.loads(cordon.stdout)
    assert len(diff["baseline"]["rejected"]) == 1 and len(diff["changed"]["rejected"]) == 1
    assert diff["rejected"] == [] and diff["summary"]["rejected"] == 0
