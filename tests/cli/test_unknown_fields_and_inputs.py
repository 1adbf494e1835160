"""Unknown fields on the command line (a warning per field, an error with --strict), standard input
(-), and the scheduler configuration given with --scheduler-config or as a document of the scenario."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kubesched.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
DUMP = ROOT / "tests" / "api" / "fixtures" / "kubectl-dump.yaml"
EXAMPLE = ROOT / "examples" / "preemption-design" / "example-1.yaml"  # C preempts A and B
ROLLOUT = ROOT / "examples" / "rollout"
NO_PREEMPTION = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      disabled: [{name: DefaultPreemption}]
"""
FIELD = '"items[5].spec.template.spec.containers[0].resources.requets"'


def invoke(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=stdin)


def refused(result: Result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    for word in words:
        assert word in result.output, result.output


@pytest.fixture
def misspelt(tmp_path: Path) -> Path:
    """The kubectl dump whose Deployment asks for `resources.requets` (its ReplicaSet and pod are right)."""
    text = DUMP.read_text()
    path = tmp_path / "snap.yaml"
    path.write_text(text.replace("            requests:\n", "            requets:\n", 1))
    return path


def test_simulate_warns_once_per_unknown_field_and_runs(misspelt: Path) -> None:
    result = invoke("simulate", str(misspelt), "-o", "json")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [f"warning: {misspelt}: document 1 (Deployment shop/web): unknown field {FIELD}"]
    assert json.loads(result.stdout)["kind"] == "SimulationResult"


@pytest.mark.parametrize("command", [
    ["simulate", "{snap}", "--strict", "--report", "{report}"],
    ["explain", "shop/web-7d4b9c8f6d-x2kqp", "{snap}", "--strict"],
    ["whatif", "{snap}", "--strict", "--cordon", "worker-1", "--report", "{report}", "--save-changed", "{saved}"],
])
def test_strict_turns_unknown_fields_into_an_error_before_anything_runs(misspelt: Path, tmp_path: Path,
                                                                        command: list[str]) -> None:
    paths = {"snap": str(misspelt), "report": str(tmp_path / "r.html"), "saved": str(tmp_path / "changed.yaml")}
    result = invoke(*(arg.format(**paths) for arg in command))
    refused(result, f"error: {misspelt}: document 1 (Deployment shop/web): unknown field {FIELD}")
    assert result.stdout == ""
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "changed.yaml").exists()


def test_whatif_warns_about_the_files_it_applies(tmp_path: Path) -> None:
    classes = tmp_path / "classes.yaml"
    classes.write_text((ROLLOUT / "classes.yaml").read_text().replace("value:", "valeu: 1\nvalue:", 1))
    result = invoke("whatif", str(ROLLOUT / "cluster.yaml"), "--apply", str(classes), "-o", "json")
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(f"warning: {classes}: document 1 (PriorityClass ")
    assert result.stderr.rstrip().endswith('unknown field "valeu"')
    refused(invoke("whatif", str(ROLLOUT / "cluster.yaml"), "--apply", str(classes), "--strict"), 'unknown field "valeu"')


@pytest.mark.parametrize("command", [["simulate", str(EXAMPLE)], ["explain", "c", str(EXAMPLE)],
                                     ["whatif", str(ROLLOUT / "cluster.yaml")]])
@pytest.mark.parametrize("content, words", [
    (NO_PREEMPTION + "podMaxBackoff: 5\n", ["podMaxBackoff: unknown field"]),
    (NO_PREEMPTION.replace("plugins:", "plugin:"), ["profiles[0].plugin: unknown field"]),
    ("", ["expected a KubeSchedulerConfiguration document, found none"]),
])
def test_a_bad_scheduler_config_is_named_by_its_file(tmp_path: Path, command: list[str], content: str,
                                                     words: list[str]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(content)
    result = invoke(*command, "--scheduler-config", str(config))
    refused(result, "--scheduler-config", str(config), *words)
    assert "spec.schedulerConfiguration" not in result.output


def preemptions(result: Result) -> int:
    assert result.exit_code == 0, result.output
    return int(json.loads(result.stdout)["summary"]["preemptions"])


def test_simulate_and_explain_take_a_scheduler_config(tmp_path: Path) -> None:
    config = tmp_path / "no-preemption.yaml"
    config.write_text(NO_PREEMPTION)
    assert preemptions(invoke("simulate", str(EXAMPLE), "-o", "json")) > 0
    assert preemptions(invoke("simulate", str(EXAMPLE), "-o", "json", "--scheduler-config", str(config))) == 0

    def phase(*extra: str) -> str:
        result = invoke("explain", "c", str(EXAMPLE), "-o", "json", *extra)
        assert result.exit_code == 0, result.output
        return str(json.loads(result.stdout)["phase"])

    assert phase() == "Running"  # C preempted A and B
    assert phase("--scheduler-config", str(config)) == "Pending"
    unregistered = tmp_path / "unregistered.yaml"
    unregistered.write_text(NO_PREEMPTION + "      enabled: [{name: NoSuchPlugin}]\n")
    refused(invoke("explain", "c", str(EXAMPLE), "--scheduler-config", str(unregistered)),
            f"{unregistered}: document 1 (KubeSchedulerConfiguration): profiles[0].plugins.multiPoint.enabled[0].name: "
            "plugin 'NoSuchPlugin' is not registered")


def test_an_invalid_configuration_in_a_scenario_names_the_file_the_document_and_the_field(tmp_path: Path) -> None:
    """A value the scheduler refuses (found when it is built, after loading) is named as every
    invalid manifest is: file, document, object and the field's full path."""
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(EXAMPLE.read_text().replace(
        "spec:\n  seed: 1\n", "spec:\n  seed: 1\n  schedulerConfiguration:\n"
                              "    apiVersion: kubescheduler.config.k8s.io/v1\n"
                              "    kind: KubeSchedulerConfiguration\n"
                              "    profiles:\n    - schedulerName: default-scheduler\n"
                              "      plugins: {score: {enabled: [{name: NoSuchScore, weight: 2}]}}\n"))
    for command in (["simulate", str(scenario)], ["explain", "c", str(scenario)]):
        refused(invoke(*command), f"error: {scenario}: document 8 (Scenario design-example-1): "
                "spec.schedulerConfiguration.profiles[0].plugins.score.enabled[0].name: plugin 'NoSuchScore' "
                "is not registered")
    scenario.write_text(EXAMPLE.read_text().replace(
        "spec:\n  seed: 1\n", "spec:\n  seed: 1\n  schedulerConfiguration: {apiVersion: kubescheduler.config.k8s.io/v1, "
                              "kind: KubeSchedulerConfiguration, percentageOfNodesToScore: 500}\n"))
    refused(invoke("simulate", str(scenario)), f"error: {scenario}: document 8 (Scenario design-example-1): "
            "spec.schedulerConfiguration.percentageOfNodesToScore: must be an integer in 0..100")


@pytest.mark.parametrize("content, where", [
    ("percentageOfNodesToScore: 500\n", "percentageOfNodesToScore: must be an integer in 0..100"),
    ("profiles:\n- schedulerName: default-scheduler\n  plugins: {filter: {enabled: [{name: PrioritySort}]}}\n",
     "profiles[0].plugins.filter: plugin 'PrioritySort' does not implement filter"),
])
def test_an_invalid_scheduler_config_file_names_the_file_the_document_and_the_field(
        tmp_path: Path, content: str, where: str) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\n"
                      "kind: KubeSchedulerConfiguration\n" + content)
    for command in (["simulate", str(EXAMPLE)], ["explain", "c", str(EXAMPLE)]):
        refused(invoke(*command, "--scheduler-config", str(config)),
                f"{config}: document 1 (KubeSchedulerConfiguration): {where}")


def test_a_scheduler_configuration_document_in_a_scenario_directory(tmp_path: Path) -> None:
    folder = tmp_path / "scenario"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / "cluster.yaml")
    (folder / "scheduler.yaml").write_text(NO_PREEMPTION)
    assert preemptions(invoke("simulate", str(folder), "-o", "json")) == 0
    refused(invoke("simulate", str(folder / "scheduler.yaml")), "nothing to simulate: only a KubeSchedulerConfiguration")
    # one given on the command line replaces it
    with_preemption = tmp_path / "default.yaml"
    with_preemption.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    assert preemptions(invoke("simulate", str(folder), "-o", "json", "--scheduler-config", str(with_preemption))) > 0
    cluster = folder / "cluster.yaml"
    cluster.write_text(EXAMPLE.read_text().replace(
        "spec:\n  seed: 1\n", "spec:\n  seed: 1\n  schedulerConfiguration: {apiVersion: kubescheduler.config.k8s.io/v1, "
                              "kind: KubeSchedulerConfiguration}\n"))
    refused(invoke("simulate", str(folder)), "two scheduler configurations", str(folder / "scheduler.yaml"),
            f"{cluster}: document 8, spec.schedulerConfiguration")


def test_standard_input_for_a_scenario_an_apply_file_and_a_scheduler_config(misspelt: Path) -> None:
    result = invoke("simulate", "-", "-o", "json", stdin=misspelt.read_text())
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["scenario"] == "stdin"
    assert result.stderr.startswith('warning: <stdin>: document 1 (Deployment shop/web): unknown field "items[5]')

    assert preemptions(invoke("simulate", str(EXAMPLE), "-o", "json", "--scheduler-config", "-",
                              stdin=NO_PREEMPTION)) == 0
    result = invoke("whatif", str(ROLLOUT / "cluster.yaml"), "--apply", "-", "--priority-class", "app=batch:batch",
                    "-o", "json", stdin=(ROLLOUT / "classes.yaml").read_text())
    assert result.exit_code == 0, result.output
    assert "apply PriorityClass batch" in json.loads(result.stdout)["changes"]
    refused(invoke("whatif", "-", "--apply", "-", stdin=misspelt.read_text()), "standard input (-) can be read only once")
    refused(invoke("simulate", "-", stdin=""), "<stdin>: nothing to simulate")


def test_whatif_apply_refuses_a_scheduler_configuration(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(NO_PREEMPTION)
    refused(invoke("whatif", str(ROLLOUT / "cluster.yaml"), "--apply", str(config)),
            f"{config}: document 1: --apply takes objects", "--scheduler-config")


SCENARIO_WITH_BOUND_PODS = """\
apiVersion: v1
kind: Node
metadata: {name: worker-1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: pinned, namespace: jobs}
spec:
  nodeName: worker-l
  containers: [{name: app, image: app, resources: {requests: {cpu: 100m}}}]
---
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {name: bound}
spec:
  steps:
  - at: 10s
    create:
      apiVersion: v1
      kind: Node
      metadata: {name: worker-2}
      status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
  - at: 20s
    create:
      apiVersion: v1
      kind: Pod
      metadata: {name: on-the-new-node}
      spec:
        nodeName: worker-2
        containers: [{name: app, image: app}]
  - at: 30s
    create:
      apiVersion: v1
      kind: Pod
      metadata: {name: late}
      spec:
        nodeName: worker-3
        containers: [{name: app, image: app}]
"""


def test_a_pod_bound_to_a_node_the_scenario_never_has_is_a_warning(tmp_path: Path) -> None:
    """A misspelt spec.nodeName (worker-l for worker-1) binds the pod to a node that does not exist:
    each command says so, naming the pod and the node; a node a step creates counts."""
    scenario = tmp_path / "bound.yaml"
    scenario.write_text(SCENARIO_WITH_BOUND_PODS)
    tail = ("does not exist: the pod is bound to it, so no scheduler places it, and the pod garbage collector "
            "deletes it once the node has been missing for 40 s")
    expected = [f'warning: {scenario}: document 2 (Pod jobs/pinned): spec.nodeName: node "worker-l" {tail}',
                f"warning: {scenario}: document 3 (Pod default/late): spec.steps[2].create.spec.nodeName: "
                f'node "worker-3" {tail}']
    for command in (["simulate", str(scenario), "-o", "json"], ["explain", "jobs/pinned", str(scenario), "--at", "10s"],
                    ["whatif", str(scenario), "--cordon", "worker-1", "-o", "json"]):
        result = invoke(*command)
        assert result.exit_code == 0, result.output
        assert result.stderr.splitlines() == expected, command
    pods = json.loads(invoke("simulate", str(scenario), "-o", "json").stdout)["pods"]
    assert pods["default/on-the-new-node"]["node"] == "worker-2"
