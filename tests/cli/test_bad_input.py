"""Mistakes a new user makes on the command line: each is refused with exit code 2, a message that
names the option or file, no traceback, and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kubesched.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "preemption-design" / "example-1.yaml")
ROLLOUT = str(ROOT / "examples" / "rollout" / "cluster.yaml")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def refused(result: Result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    for word in words:
        assert word in result.output, result.output


@pytest.mark.parametrize("command", [
    ["simulate", EXAMPLE, "--seed", "-1"],
    ["whatif", ROLLOUT, "--seed", "-1"],
    ["explain", "c", EXAMPLE, "--seed", "-1"],
])
def test_a_negative_seed_is_refused(command: list[str]) -> None:
    refused(invoke(*command), "--seed", "-1")


def test_a_negative_seed_in_a_scenario_names_the_field(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("apiVersion: kubesched.io/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec: {seed: -3}\n")
    refused(invoke("simulate", str(scenario)), str(scenario), "spec.seed", "greater than or equal to 0")


@pytest.mark.parametrize("command", [
    ["simulate", EXAMPLE, "--until", "-5s"],
    ["whatif", ROLLOUT, "--until", "-5s"],
    ["explain", "c", EXAMPLE, "--at", "-1s"],
])
def test_a_negative_time_is_refused(command: list[str]) -> None:
    refused(invoke(*command), "cannot be negative")


@pytest.mark.parametrize("option", ["--report", "--save-changed"])
def test_an_output_file_in_a_missing_directory_is_refused_before_running(tmp_path: Path, option: str) -> None:
    target = tmp_path / "no-such-dir" / "out.html"
    refused(invoke("whatif", ROLLOUT, "--enable-preemption", option, str(target)), option, "does not exist")
    assert not target.parent.exists()


def test_simulate_report_in_a_missing_directory_is_refused(tmp_path: Path) -> None:
    refused(invoke("simulate", EXAMPLE, "--report", str(tmp_path / "missing" / "r.html")), "--report")


def test_both_preemption_switches_together_are_refused() -> None:
    refused(invoke("whatif", ROLLOUT, "--enable-preemption", "--disable-preemption"),
            "--enable-preemption", "--disable-preemption")


@pytest.mark.parametrize("content, words", [
    ("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n---\nkind: Other\n",
     ["--scheduler-config", "single document"]),
    ("profiles: [\n", ["--scheduler-config"]),
    ("", ["--scheduler-config", "expected a KubeSchedulerConfiguration document"]),
])
def test_a_broken_scheduler_config_names_the_option_and_file(tmp_path: Path, content: str,
                                                             words: list[str]) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(content)
    refused(invoke("whatif", ROLLOUT, "--scheduler-config", str(config)), str(config), *words)


def test_an_invalid_scheduler_config_is_reported_against_its_file(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                      "profiles:\n- schedulerName: default-scheduler\n  plugins:\n"
                      "    filter:\n      enabled:\n      - name: NoSuchPlugin\n")
    result = invoke("whatif", ROLLOUT, "--scheduler-config", str(config))
    refused(result, str(config), "NoSuchPlugin")
    assert "spec.schedulerConfiguration" not in result.output


def test_explaining_an_unknown_pod_fails() -> None:
    refused(invoke("simulate", EXAMPLE, "--explain", "no-such-pod"), "no-such-pod")


def test_decisions_need_json_output() -> None:
    refused(invoke("simulate", EXAMPLE, "--decisions"), "--decisions", "--output json")
    assert invoke("simulate", EXAMPLE, "--decisions", "-o", "json").exit_code == 0


def test_an_empty_file_or_directory_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing here\n")
    refused(invoke("simulate", str(empty)), str(empty), "nothing to simulate")
    folder = tmp_path / "folder"
    folder.mkdir()
    refused(invoke("simulate", str(folder)), str(folder), "nothing to simulate")


@pytest.mark.parametrize("args, words", [
    (["--drain", "no-such-node"], ["--drain no-such-node", "no Node of that name", "node-1"]),
    (["--cordon", "no-such-node"], ["--cordon no-such-node", "no Node of that name"]),
    (["--priority-class", "app=batch:no-such-class"], ["no PriorityClass 'no-such-class'"]),
    (["--priority-class", "app=nothing-has-this:system-cluster-critical"], ["matches no pod or workload"]),
    (["--priority-class", "app=batch,oops:system-cluster-critical"], ["key=value"]),
])
def test_whatif_changes_must_name_what_the_snapshot_has(tmp_path: Path, args: list[str], words: list[str]) -> None:
    saved = tmp_path / "changed.yaml"
    refused(invoke("whatif", ROLLOUT, *args, "--save-changed", str(saved)), *words)
    assert not saved.exists()


def test_whatif_says_why_a_change_makes_no_difference() -> None:
    result = invoke("whatif", ROLLOUT, "--enable-preemption")
    assert result.exit_code == 0, result.output
    assert "every pod has priority 0" in " ".join(result.output.split())


def test_whatif_help_example_for_priority_class_is_accepted() -> None:
    help_text = " ".join(invoke("whatif", "--help").output.split())
    assert "'app=batch:low'" in help_text
    result = invoke("whatif", ROLLOUT, "--apply", str(ROOT / "examples" / "rollout" / "classes.yaml"),
                    "--priority-class", "app=batch:batch", "-o", "json")
    assert result.exit_code == 0, result.output
