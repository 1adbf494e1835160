"""Schedulers that race (a Scenario's ``spec.schedulers``): each its own configuration, queue, cache
and timing against the one embedded cluster; the kubelet's admission refusing the pod that lost the
race; cross-scheduler preemptions and ping-pong counted in the result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kubesched.analysis.whatif.documents import scenario_documents
from kubesched.api.errors import ManifestError
from kubesched.api.loader import load_scenario
from kubesched.cli.main import cli
from kubesched.report.html import simulation_report
from kubesched.sim import simulate
from kubesched.sweep.fingerprint import base_digest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "racing-schedulers"
RACE = EXAMPLES / "race.yaml"
PING_PONG = EXAMPLES / "ping-pong.yaml"


def _events(result: dict[str, Any], reason: str) -> list[dict[str, Any]]:
    return [e for e in result["events"] if e["reason"] == reason]


def _web_pods(result: dict[str, Any]) -> list[str]:
    """The web Deployment's pods, in the order they were created."""
    return [e["pod"] for e in _events(result, "Created") if e["pod"].startswith("default/web-")]


def test_the_design_race_alpha_preempts_beta_takes_the_space_and_the_kubelet_refuses_alphas_pod() -> None:
    result = simulate(RACE).result
    first, replacement = _web_pods(result)
    # alpha preempted low for web's first pod and nominated it to node-1
    preempted = {e["pod"]: e for e in _events(result, "Preempted")}
    assert preempted["default/low"]["scheduler"] == "alpha"
    assert preempted["default/low"]["preemptor"] == first
    # beta, which never heard of the nomination, bound the opportunist into the freed space first
    scheduled = [(e["time"], e["pod"], e["scheduler"]) for e in _events(result, "Scheduled")]
    assert scheduled == [(0.0, "default/low", "alpha"), (26.0, "default/opportunist", "beta"),
                         (30.0, first, "alpha"), (51.0, replacement, "alpha")]
    # the kubelet refused alpha's pod: Failed, with the predicate admit handler's reason and words
    refusal = _events(result, "OutOfcpu")
    assert [(e["time"], e["pod"], e["phase"]) for e in refusal] == [(31.0, first, "Failed")]
    assert refusal[0]["message"] == "Node didn't have enough resource: cpu, requested: 3000, used: 3000, capacity: 4000"
    assert result["pods"][first]["phase"] == "Failed" and result["pods"][first]["reason"] == "OutOfcpu"
    # its ReplicaSet replaced it; the replacement preempted the opportunist (a pod beta placed) and runs
    assert preempted["default/opportunist"]["scheduler"] == "alpha"
    assert preempted["default/opportunist"]["preemptor"] == replacement
    assert result["pods"][replacement]["phase"] == "Running" and result["pods"][replacement]["node"] == "node-1"
    racing = result["racing"]
    assert racing["crossPreemptions"] == [{"preemptor": "alpha", "victimPlacedBy": "beta", "victims": 1}]
    assert racing["pingPong"] == [{"schedulers": ["alpha", "beta"], "rounds": 0}]
    assert racing["admissionRejections"] == [{"placedBy": "alpha", "reason": "OutOfcpu", "pods": 1}]
    rows = {row["name"]: row for row in racing["schedulers"]}
    assert rows["alpha"] == {"name": "alpha", "schedulerNames": ["alpha-scheduler"], "informerDelay": 5.0,
                             "bindDelay": 0.0, "scheduled": 3, "preemptions": 2, "victims": 2, "rejectedByKubelet": 1}
    assert rows["beta"]["scheduled"] == 1 and rows["beta"]["preemptions"] == 0


def test_the_refused_pod_carries_the_kubelets_status() -> None:
    outcome = simulate(RACE)
    first = _web_pods(outcome.result)[0]
    namespace, name = first.split("/")
    pod = outcome.cluster.get("Pod", namespace, name)
    assert pod is not None
    assert pod["status"]["phase"] == "Failed"
    assert pod["status"]["reason"] == "OutOfcpu"
    assert pod["status"]["message"] == ("Pod was rejected: Node didn't have enough resource: cpu, requested: 3000, "
                                        "used: 3000, capacity: 4000")


def test_without_the_informer_lag_there_is_no_race() -> None:
    """alpha hearing of low's deletion at once binds web's pod before beta (1 s late) sees the space."""
    scenario = load_scenario(RACE)
    scenario.schedulers[0].informer_delay = 0.0
    result = simulate(scenario).result
    assert not _events(result, "OutOfcpu")
    assert result["racing"]["admissionRejections"] == []
    assert result["racing"]["crossPreemptions"] == []
    assert result["pods"]["default/opportunist"]["phase"] == "Pending"
    first, = _web_pods(result)
    assert result["pods"][first]["phase"] == "Running"


def test_ping_pong_counts_each_scheduler_preempting_the_others_pods() -> None:
    result = simulate(PING_PONG).result
    racing = result["racing"]
    assert racing["crossPreemptions"] == [{"preemptor": "alpha", "victimPlacedBy": "beta", "victims": 1},
                                          {"preemptor": "beta", "victimPlacedBy": "alpha", "victims": 1}]
    assert racing["pingPong"] == [{"schedulers": ["alpha", "beta"], "rounds": 1}]
    assert result["pods"]["default/a-high"]["phase"] == "Running"


def test_bind_delay_puts_time_between_the_decision_and_the_binding() -> None:
    """a-low is gone at 11 s; beta hears of it at 12 s and its binding is written half a second later."""
    result = simulate(PING_PONG).result
    assert [(e["time"], e["scheduler"]) for e in _events(result, "Scheduled") if e["pod"] == "default/b-mid"] == [
        (12.5, "beta")]
    assert [(e["time"], e["pod"]) for e in _events(result, "Started") if e["pod"] == "default/b-mid"] == [
        (12.5, "default/b-mid")]


def test_racing_runs_are_deterministic() -> None:
    one = simulate(RACE, decisions=True).result
    two = simulate(RACE, decisions=True).result
    assert json.dumps(one) == json.dumps(two)
    # the decisions of both schedulers, in the order they were made
    assert [d["pod"] for d in one["preemptionDecisions"]][:1] == ["default/opportunist"]


def test_a_scenario_without_schedulers_has_no_racing_section_nor_scheduler_fields() -> None:
    result = simulate(EXAMPLES.parent / "preemption-design" / "example-1.yaml").result
    assert "racing" not in result
    assert not any("scheduler" in e for e in result["events"])


# -- the scenario syntax and its errors ------------------------------------------------------------

def _write(tmp_path: Path, schedulers: Any, *, extra_docs: tuple[dict[str, Any], ...] = (),
           spec: dict[str, Any] | None = None) -> Path:
    docs = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}},
        *extra_docs,
        {"apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": "s"},
         "spec": {"schedulers": schedulers, **(spec or {})}},
    ]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _config(name: str, **profile: Any) -> dict[str, Any]:
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": name, **profile}]}


def _refused(path: Path) -> str:
    with pytest.raises(ManifestError) as err:
        simulate(path)
    return str(err.value)


def test_two_schedulers_serving_one_scheduler_name_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"name": "a", "configuration": _config("x")}, {"name": "b", "configuration": _config("x")}])
    assert _refused(path) == (
        f'{path}: document 2 (Scenario s): spec.schedulers[1].configuration.profiles[0].schedulerName: '
        'schedulerName "x" is served by scheduler "a" too: a pod could go to either; give each scheduler\'s '
        "profiles names of their own")


def test_two_schedulers_with_kube_schedulers_defaults_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"name": "a"}, {"name": "b"}])
    assert 'spec.schedulers[1].configuration: schedulerName "default-scheduler" is served by scheduler "a" too' \
        in _refused(path)


@pytest.mark.parametrize(("schedulers", "field", "message"), [
    ([], "spec.schedulers", "must list at least one scheduler"),
    ([{"configuration": _config("x")}], "spec.schedulers[0].name", "required"),
    ([{"name": "A_1"}], "spec.schedulers[0].name", ""),
    ([{"name": "a"}, {"name": "a", "configuration": _config("y")}], "spec.schedulers[1].name",
     'duplicate scheduler name "a" (also spec.schedulers[0])'),
    ([{"name": "a", "informerDelay": "soon"}], "spec.schedulers[0].informerDelay", ""),
    ([{"name": "a", "bindDelay": "-1s"}], "spec.schedulers[0].bindDelay", "must not be negative"),
    ([{"name": "a", "cycleTime": "1s"}], "spec.schedulers[0].cycleTime", "unknown field in a scheduler"),
    ([{"name": "a", "configuration": _config("x"), "configurationFile": "c.yaml"}], "spec.schedulers[0]",
     "give configuration or configurationFile, not both"),
    ([{"name": "a", "configuration": {"kind": "Nope"}}], "spec.schedulers[0].configuration.kind",
     'must be "KubeSchedulerConfiguration"'),
    ({"name": "a"}, "spec.schedulers", ""),
])
def test_malformed_schedulers_are_refused_naming_the_field(tmp_path: Path, schedulers: Any, field: str,
                                                          message: str) -> None:
    text = _refused(_write(tmp_path, schedulers))
    assert text.startswith(f"{tmp_path / 's.yaml'}: document 2 (Scenario s): {field}: ")
    assert message in text


def test_a_configuration_file_is_read_from_the_scenarios_directory(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(_config("b-sched")))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"schedulerName": "b-sched", "containers": [{"name": "c", "image": "i"}]}}
    path = _write(tmp_path, [{"name": "a"}, {"name": "b", "configurationFile": "b.yaml"}], extra_docs=(pod,))
    result = simulate(path).result
    assert [(e["pod"], e["scheduler"]) for e in _events(result, "Scheduled")] == [("default/p", "b")]
    assert result["racing"]["schedulers"][1]["schedulerNames"] == ["b-sched"]


def test_a_missing_configuration_file_is_refused(tmp_path: Path) -> None:
    text = _refused(_write(tmp_path, [{"name": "a", "configurationFile": "gone.yaml"}]))
    assert text == f"{tmp_path / 's.yaml'}: document 2 (Scenario s): spec.schedulers[0].configurationFile: " \
                   f"no such file: {tmp_path / 'gone.yaml'}"


def test_an_invalid_configuration_file_is_refused_naming_that_file(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(yaml.safe_dump({**_config("b"), "profiles": [{"schedulerName": "b", "oops": 1}]}))
    text = _refused(_write(tmp_path, [{"name": "b", "configurationFile": "b.yaml"}]))
    assert text.startswith(f"{tmp_path / 'b.yaml'}: document 1")
    assert "profiles[0].oops" in text


def test_a_configuration_error_found_when_building_the_scheduler_names_its_field(tmp_path: Path) -> None:
    config = _config("x", plugins={"score": {"enabled": [{"name": "NoSuchPlugin"}]}})
    text = _refused(_write(tmp_path, [{"name": "a", "configuration": config}]))
    assert text.startswith(f"{tmp_path / 's.yaml'}: document 2 (Scenario s): "
                           "spec.schedulers[0].configuration.profiles[0].plugins.score.enabled[0].name: ")
    assert "NoSuchPlugin" in text


def test_schedulers_and_another_configuration_are_refused(tmp_path: Path) -> None:
    text = _refused(_write(tmp_path, [{"name": "a"}], spec={"schedulerConfiguration": _config("x")}))
    assert "spec.schedulers: spec.schedulers configures each scheduler; spec.schedulerConfiguration cannot be" in text
    document = {**_config("x")}
    text = _refused(_write(tmp_path, [{"name": "a"}], extra_docs=(document,)))
    assert text.startswith(f"{tmp_path / 's.yaml'}: document 3 (Scenario s): spec.schedulers: ")
    assert "a KubeSchedulerConfiguration document cannot be given too" in text


# -- the command line --------------------------------------------------------------------------------

def test_simulate_prints_the_schedulers_and_the_ping_pong_row() -> None:
    out = CliRunner().invoke(cli, ["simulate", str(PING_PONG), "-o", "wide"])
    assert out.exit_code == 0, out.output
    assert "Schedulers" in out.output
    assert "alpha preempted 1 pod placed by beta" in out.output
    assert "beta preempted 1 pod placed by alpha" in out.output
    assert "preemption ping-pong alpha <-> beta: 1 round" in out.output
    assert "beta: node node-1" in out.output  # the timeline names the scheduler


def test_scheduler_config_option_is_refused_with_schedulers(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(_config("x")))
    out = CliRunner().invoke(cli, ["simulate", str(RACE), "--scheduler-config", str(config)])
    assert out.exit_code == 2
    assert "spec.schedulers configures each of its schedulers" in out.output


def test_a_pending_pod_of_the_second_scheduler_is_not_called_unserved(tmp_path: Path) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"},
           "spec": {"schedulerName": "b-sched", "containers": [
               {"name": "c", "image": "i", "resources": {"requests": {"cpu": "8"}}}]}}
    path = _write(tmp_path, [{"name": "a"}, {"name": "b", "configuration": _config("b-sched")}], extra_docs=(pod,))
    out = CliRunner().invoke(cli, ["simulate", str(path)])
    assert out.exit_code == 0
    assert "no profile of this configuration provides" not in out.output


def test_explain_diagnoses_a_pod_with_the_scheduler_that_serves_it() -> None:
    out = CliRunner().invoke(cli, ["explain", "opportunist", str(RACE), "--at", "20s"])
    assert out.exit_code == 0, out.output
    assert "no profile for schedulerName" not in out.output
    assert "Insufficient cpu" in out.output


def test_a_racing_scenario_written_back_reads_the_same(tmp_path: Path) -> None:
    """whatif --save-changed and the ui write a scenario back: its schedulers come along, inline."""
    path = tmp_path / "saved.yaml"
    path.write_text(yaml.safe_dump_all(scenario_documents(load_scenario(RACE))))
    saved = load_scenario(path)
    assert [(s.name, s.configuration, s.informer_delay) for s in saved.schedulers] == [
        (s.name, s.configuration, s.informer_delay) for s in load_scenario(RACE).schedulers]
    assert simulate(saved).result["racing"] == simulate(RACE).result["racing"]


def test_a_sweep_tells_scenarios_apart_by_their_schedulers() -> None:
    scenario = load_scenario(RACE)
    before = base_digest(scenario)
    scenario.schedulers[0].informer_delay = 0.0
    assert base_digest(scenario) != before


def test_the_html_report_has_the_schedulers_and_the_ping_pong_row() -> None:
    html = simulation_report(simulate(PING_PONG).result)
    assert "<h2>Schedulers</h2>" in html
    assert "<h2>Preemption ping-pong</h2>" in html
    assert "<td>alpha &lt;-&gt; beta</td><td>1</td>" in html
