"""`kubesched sweep` as a user runs it: a sweep file over the demo cluster; each variant's result is
the one `kubesched simulate` / `kubesched whatif` gives with the same inputs, byte for byte."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner, Result

from kubesched.api.loader import load_scenario
from kubesched.cli.main import cli
from kubesched.cli.sweep import executor, progress_bar
from kubesched.sweep.execute import Executor, ResultStore, run_sweep
from kubesched.sweep.fingerprint import variant_inputs
from kubesched.sweep.spec import load_sweep
from kubesched.testkit.builders import make_deployment, make_node, make_pod

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DEMO = EXAMPLES / "demo.yaml"
NO_PREEMPTION = EXAMPLES / "sweeps" / "no-preemption.yaml"


def _sweep_file(tmp_path: Path, **spec: Any) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": "Sweep",
                                    "metadata": {"name": "t"}, "spec": {"base": str(DEMO), **spec}}))
    return path


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["sweep", *args], catch_exceptions=False)


def _cli_json(*args: str) -> str:
    out = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert out.exit_code == 0, out.output
    return out.output


def test_each_variant_is_the_simulation_the_cli_runs(tmp_path: Path) -> None:
    sweep = _sweep_file(tmp_path, seeds=[3, 4], schedulerConfigs={"default": "", "off": str(NO_PREEMPTION)},
                        changes={"as-is": {}, "drain": {"drain": ["node-1"], "ignoreDaemonSets": True, "force": True}})
    out = _invoke(str(sweep), "--workers", "0", "--out", str(tmp_path / "out"), "-o", "json")
    assert out.exit_code == 0, out.output
    document = json.loads(out.output)
    assert len(document["variants"]) == 8 and len(document["configurations"]) == 4
    results = tmp_path / "out" / "results"
    simulated = _cli_json("simulate", str(DEMO), "--scheduler-config", str(NO_PREEMPTION), "--seed", "4", "-o", "json")
    assert (results / "schedulerConfig=off,change=as-is,seed=4.json").read_text() == simulated
    diff = json.loads(_cli_json("whatif", str(DEMO), "--drain", "node-1", "--ignore-daemonsets", "--force",
                                "--seed", "3", "-o", "json"))
    changed = {k: v for k, v in diff["changed"].items() if k not in ("preemptionDecisions", "attempts")}
    assert (results / "schedulerConfig=default,change=drain,seed=3.json").read_text() == json.dumps(changed, indent=2) + "\n"
    # the metrics are those of the results
    record = next(v for v in document["variants"] if v["id"] == "schedulerConfig=default,change=drain,seed=3")
    assert record["metrics"]["preemptions"] == diff["summary"]["changed"]["preemptions"]
    assert record["metrics"]["pending"] == diff["summary"]["changed"]["pending"]
    off = next(c for c in document["configurations"] if c["configuration"] == "schedulerConfig=off,change=as-is")
    assert off["metrics"]["preemptions"] == {"mean": 0.0, "ci95": 0.0, "min": 0, "max": 0, "n": 2}


def test_a_node_pool_and_replica_factor_change_the_cluster_they_say(tmp_path: Path) -> None:
    sweep = _sweep_file(tmp_path, nodePool={"template": "node-6", "counts": [1, 4]}, replicaFactor=[1, 2])
    out = _invoke(str(sweep), "--workers", "0", "--out", str(tmp_path / "out"), "-o", "json")
    assert out.exit_code == 0, out.output
    results = tmp_path / "out" / "results"
    one = json.loads((results / "nodePoolCount=1,replicaFactor=1,seed=42.json").read_text())
    four = json.loads((results / "nodePoolCount=4,replicaFactor=1,seed=42.json").read_text())
    assert one == json.loads(_cli_json("simulate", str(DEMO), "-o", "json"))  # the base as it is
    assert [n["node"] for n in four["nodes"]] == [n["node"] for n in one["nodes"]] + ["node-6-2", "node-6-3", "node-6-4"]
    assert four["summary"]["pending"] < one["summary"]["pending"]
    double = json.loads((results / "nodePoolCount=1,replicaFactor=2,seed=42.json").read_text())
    assert len(double["pods"]) > len(one["pods"])


def test_a_sweep_run_again_skips_what_is_done_and_a_failing_variant_does_not_stop_the_others(tmp_path: Path) -> None:
    base = yaml.safe_load_all(DEMO.read_text())
    objects = [o for o in base if o]
    # a node named as the pool's second copy would be: that variant cannot be made
    clash = next(o for o in objects if o["kind"] == "Node" and o["metadata"]["name"] == "node-6")
    clash = json.loads(json.dumps(clash))
    clash["metadata"]["name"] = "node-5-2"
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([*objects, clash]))
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": "Sweep", "metadata": {"name": "r"},
                                     "spec": {"base": "cluster.yaml", "seeds": [1, 2],
                                              "nodePool": {"template": "node-5", "counts": [1, 2]}}}))
    out_dir = tmp_path / "out"
    first = _invoke(str(sweep), "--workers", "0", "--out", str(out_dir))
    assert first.exit_code == 1
    assert "failed nodePoolCount=2,seed=1: ValueError: nodePool: a node 'node-5-2' exists already" in first.output
    done = sorted(p.name for p in (out_dir / "results").iterdir())
    assert done == ["nodePoolCount=1,seed=1.json", "nodePoolCount=1,seed=2.json"]
    stamp = {p.name: p.stat().st_mtime_ns for p in (out_dir / "variants").iterdir()}
    (out_dir / "variants" / "nodePoolCount=1,seed=2.json").unlink()
    again = _invoke(str(sweep), "--workers", "0", "--out", str(out_dir), "-o", "json")
    document = json.loads(again.output)
    assert [v["id"] for v in document["variants"]] == ["nodePoolCount=1,seed=1", "nodePoolCount=1,seed=2",
                                                      "nodePoolCount=2,seed=1", "nodePoolCount=2,seed=2"]
    after = {p.name: p.stat().st_mtime_ns for p in (out_dir / "variants").iterdir()}
    assert after["nodePoolCount=1,seed=1.json"] == stamp["nodePoolCount=1,seed=1.json"]  # not run again
    assert after["nodePoolCount=2,seed=1.json"] != stamp["nodePoolCount=2,seed=1.json"]  # failed: run again
    assert document["configurations"][1]["failed"] == 2


@pytest.mark.parametrize(("spec", "message"), [
    ({"seeds": [1, -2]}, "spec.seeds[1]: a seed is an integer, 0 or more"),
    ({"schedulerConfigs": {"bad name!": ""}}, "spec.schedulerConfigs.bad name!: a name is"),
    ({"changes": {"x": {"drian": ["node-1"]}}}, "spec.changes.x.drian: unknown field"),
    ({"changes": {"x": {"force": True}}}, "spec.changes.x: force, ignoreDaemonSets"),
    ({"changes": {"x": {"drain": ["node-99"]}}}, "spec.changes.x: --drain node-99: no Node of that name"),
    ({"nodePool": {"template": "node-99", "counts": [2]}}, "spec.nodePool.template: no Node 'node-99' in the base"),
    ({"replicaFactor": [0]}, "spec.replicaFactor: a list of numbers above 0"),
    ({"untill": "5m"}, "spec.untill: unknown field"),
])
def test_a_bad_sweep_file_is_refused_naming_the_file_and_the_field(tmp_path: Path, spec: dict[str, Any],
                                                                   message: str) -> None:
    sweep = _sweep_file(tmp_path, **spec)
    out = CliRunner().invoke(cli, ["sweep", str(sweep), "--workers", "0", "--out", str(tmp_path / "out")])
    assert out.exit_code == 2
    assert f"error: {sweep}: document 1 (Sweep)" in out.output and message in out.output, out.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out" / "variants").iterdir())


@pytest.mark.parametrize("command", ["sweep", "plan"])
def test_a_file_without_a_base_and_no_kubeconfig_is_refused_naming_spec_base(tmp_path: Path, command: str) -> None:
    kind = command.capitalize()
    spec = {"sweep": {"seeds": [1]}, "plan": {"nodePool": {"template": "node-1", "min": 1, "max": 2},
                                             "goals": ["pending == 0"]}}[command]
    path = tmp_path / f"{command}.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": kind, "spec": spec}))
    out = CliRunner().invoke(cli, [command, str(path), "--local"])
    assert out.exit_code == 2 and "Traceback" not in out.output
    assert out.output.startswith(f"error: {path}: document 1 ({kind}): spec.base: the scenario or snapshot to "
                                 "simulate (a path relative to this file) is required, or a history to replay "
                                 "({history: PATH, ...}), or a live cluster given with --kubeconfig")
    path.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": kind,
                                    "spec": {"base": str(DEMO), **spec}}))
    context = CliRunner().invoke(cli, [command, str(path), "--context", "prod", "--local"])
    assert context.exit_code == 2 and "--context goes with --kubeconfig" in context.output


def test_the_example_sweep_on_local_dask_workers_with_parquet_and_report(tmp_path: Path) -> None:
    example = tmp_path / "sweeps"
    shutil.copytree(EXAMPLES / "sweeps", example)
    shutil.copy(DEMO, tmp_path / "demo.yaml")
    here = _invoke(str(example / "preemption-plans.yaml"), "--workers", "0", "-o", "json")
    parquet, report = tmp_path / "v.parquet", tmp_path / "r.html"
    dask = _invoke(str(example / "preemption-plans.yaml"), "--workers", "2", "-o", "json",
                   "--parquet", str(parquet), "--report", str(report))
    assert here.exit_code == dask.exit_code == 0
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in json.loads(here.output)["variants"]]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in json.loads(dask.output)["variants"]]
    table = pq.read_table(parquet).to_pydict()
    assert len(table["id"]) == 20 and set(table["change"]) == {"as-is", "drain-node-1"}
    assert table["preemptions"] == [r["metrics"]["preemptions"] for r in strip]
    html = report.read_text()
    assert html.count("<svg") >= 6 and "schedulerConfig=no-preemption,change=as-is" in html


def test_local_runs_here_and_conflicting_options_are_refused(tmp_path: Path) -> None:
    sweep = _sweep_file(tmp_path, seeds=[1, 2])
    local = _invoke(str(sweep), "--local", "-o", "json")
    assert local.exit_code == 0, local.output
    assert json.loads(local.output)["configurations"][0]["metrics"]["pending"]["n"] == 2
    assert "Sweep t: 2 variants in 1 configuration," in _invoke(str(sweep), "--local").output
    for args, message in ((["--local", "--workers", "2"], "--local runs the variants here"),
                          (["--dask", "tcp://127.0.0.1:1", "--workers", "2"], "--dask runs on that cluster's workers")):
        out = CliRunner().invoke(cli, ["sweep", str(sweep), *args])
        assert out.exit_code == 2 and message in out.output


def test_a_metric_the_same_in_every_run_has_no_interval(tmp_path: Path) -> None:
    objects = [make_node(f"node-{i}", cpu="8") for i in range(5)]
    objects.append(make_deployment("web", 18, make_pod("web", cpu="1")))
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(objects))
    sweep = tmp_path / "fits.yaml"
    sweep.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": "Sweep",
                                     "spec": {"base": "cluster.yaml", "seeds": {"first": 0, "count": 30}}}))
    out = _invoke(str(sweep), "--local", "-o", "json")
    allocation = json.loads(out.output)["configurations"][0]["metrics"]["cpuAllocation"]
    assert allocation == {"mean": 0.45, "ci95": 0.0, "min": 0.45, "max": 0.45, "n": 30}
    assert "0.45 " in _invoke(str(sweep), "--local").output  # not "0.45 ± 8.4e-17"


def test_per_class_metrics_add_up_and_are_aggregated_over_seeds(tmp_path: Path) -> None:
    example = tmp_path / "sweeps"
    shutil.copytree(EXAMPLES / "sweeps", example)
    shutil.copy(DEMO, tmp_path / "demo.yaml")
    parquet = tmp_path / "v.parquet"
    out = _invoke(str(example / "preemption-plans.yaml"), "--local", "-o", "json", "--parquet", str(parquet))
    document = json.loads(out.output)
    variants = document["variants"]
    for v in variants:
        m = v["metrics"]
        assert sum(m["victimsByClass"].values()) == m["victims"]
        assert sum(m["preemptionsByClass"].values()) == m["preemptions"]
        assert m["pdbViolations"] <= m["victims"]
    # one variant's numbers, from simulate's own JSON
    result = json.loads(_cli_json("simulate", str(DEMO), "--seed", "1", "-o", "json"))
    first = variants[0]["metrics"]
    assert variants[0]["id"] == "schedulerConfig=default,change=as-is,seed=1"
    assert first["podsAllocation"] == sum(n["pods"] for n in result["nodes"]) / sum(n["allocatablePods"] for n in result["nodes"])
    assert first["pending"] == result["summary"]["pending"]
    # a configuration's per-class entries are its seeds' values summed up
    default = document["configurations"][0]
    runs = [v["metrics"] for v in variants if v["configuration"] == default["configuration"]]
    p99 = [r["byClass"]["payments"]["schedulingLatencyP99"] for r in runs]
    assert default["byClass"]["payments"]["schedulingLatencyP99"]["mean"] == pytest.approx(sum(p99) / len(p99))
    assert default["byClass"]["payments"]["schedulingLatencyP99"]["n"] == 5
    batch = [r["victimsByClass"].get("batch", 0) for r in runs]
    assert default["victimsByClass"]["batch"]["mean"] == pytest.approx(sum(batch) / 5)
    assert default["victimsByClass"]["batch"]["min"] == min(batch)
    table = _invoke(str(example / "preemption-plans.yaml"), "--local").output
    assert "By PriorityClass" in table and "payments" in table
    columns = pq.read_table(parquet).to_pydict()
    assert columns["byClass.payments.schedulingLatencyP99"][:5] == p99
    assert columns["victimsByClass.batch"][:5] == batch


def test_a_replica_factor_scales_the_replicas_the_scenario_s_patches_set(tmp_path: Path) -> None:
    """A Deployment of 2 replicas patched to 3 at one minute: at a factor of 2 it has 4, then 6 (the
    patch would otherwise bring it back to 3); a patch not setting replicas is left as it is."""
    base = tmp_path / "base"
    base.mkdir()
    (base / "cluster.yaml").write_text(yaml.safe_dump_all(
        [make_node("node-1", cpu="16"), make_deployment("web", 2, make_pod("web", cpu="100m"))]))
    (base / "scenario.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kubesched.io/v1alpha1", "kind": "Scenario", "metadata": {"name": "grow"},
        "spec": {"until": "3m", "steps": [
            {"at": "1m", "patch": {"kind": "Deployment", "namespace": "default", "name": "web",
                                   "merge": {"spec": {"replicas": 3}}}},
            {"at": "2m", "patch": {"kind": "Deployment", "namespace": "default", "name": "web",
                                   "merge": {"metadata": {"labels": {"tier": "web"}}}}}]}}))
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": "Sweep", "metadata": {"name": "r"},
                                     "spec": {"base": "base", "replicaFactor": [1, 1.5, 2]}}))
    out = _invoke(str(sweep), "--local", "-o", "json")
    assert out.exit_code == 0, out.output
    scheduled = {v["axes"]["replicaFactor"]: v["metrics"]["scheduled"] for v in json.loads(out.output)["variants"]}
    assert scheduled == {1: 3, 1.5: 5, 2: 6}  # 3 x 1.5 = 4.5, rounded half up


def test_the_tables_read_at_80_columns(tmp_path: Path) -> None:
    """At 80 columns every heading and every cell reads whole: the configurations by their axes'
    values under a heading naming the axes, the metrics in as many tables as they need."""
    sweep = EXAMPLES / "sweeps" / "preemption-plans.yaml"
    out = CliRunner(env={"COLUMNS": "80"}).invoke(cli, ["sweep", str(sweep), "--local"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert max(map(len, lines)) <= 80
    for heading in ("schedulerConfig, change", "runs", "pending", "schedulingLatencyP99", "preemptions", "victims",
                    "pdbViolations", "evictions", "cpuAllocation", "schedulingLatencyP50"):
        assert any(heading in line for line in lines), heading
    rows = {tuple(cell.strip() for cell in line.strip("│").split("│")) for line in lines if line.startswith("│")}
    assert ("default,drain-node-1", "5", "5.8 ± 0.56", "51.3 ± 1.5") in rows  # runs, pending, p99
    assert ("no-preemption,drain-node-1", "0", "0", "0") in rows  # preemptions, victims, pdbViolations
    assert ("default,as-is", "payments", "63 ± 2.7", "5.8 ± 0.56") in rows  # by class: p99, preemptions
    # piped, with no width: one table, the configurations' whole names
    wide = CliRunner().invoke(cli, ["sweep", str(sweep), "--local"], catch_exceptions=False).output
    assert any("schedulerConfig=default,change=drain-node-1" in line and "cpuAllocation" not in line
               and "0.773 ± 0.028" in line for line in wide.splitlines())


def test_after_a_resume_the_progress_counts_only_the_variants_left_to_run(tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    assert _invoke(str(_sweep_file(tmp_path, seeds={"first": 1, "count": 3})), "--local", "--out", str(out_dir)).exit_code == 0
    spec = load_sweep(_sweep_file(tmp_path, seeds={"first": 1, "count": 5}))
    base = load_scenario(spec.base_path)
    bar, advance = progress_bar("sweep t", 5, show=False)
    with Executor(base, spec) as here:
        records = run_sweep(here, spec.variants(base.seed), ResultStore(str(out_dir), variant_inputs(spec, base)),
                            progress=advance)
    assert [r["id"] for r in records] == [f"seed={i}" for i in range(1, 6)]
    task = bar.tasks[0]
    assert (task.total, task.completed) == (2, 2)  # seeds 4 and 5: the three done before are not counted
    assert task.fields["state"] == "done 2, running 0, failed 0"


def test_the_report_s_bars_draw_the_95_percent_intervals_their_titles_promise(tmp_path: Path) -> None:
    report = tmp_path / "r.html"
    out = _invoke(str(EXAMPLES / "sweeps" / "preemption-plans.yaml"), "--local", "--report", str(report))
    assert out.exit_code == 0, out.output
    charts = {re.search(r"<title>([^<]*)</title>", svg).group(1): svg  # type: ignore[union-attr]
              for svg in re.findall(r"<svg.*?</svg>", report.read_text(), re.S)}
    pending = charts["pending (mean over seeds, 95 % interval)"]
    # default,as-is: 2.2 ± 0.56 (five seeds); no-preemption's runs all agree: no whisker
    whiskers = re.findall(r'<path class="interval" d="M[\d.]+,([\d.]+)V([\d.]+)[^"]*"[^>]*><title>([^<]*)</title>', pending)
    tips = [w[2] for w in whiskers]
    assert tips == ["schedulerConfig=default,change=as-is pending: 2.2 ± 0.56 (95 % interval)",
                    "schedulerConfig=default,change=drain-node-1 pending: 5.8 ± 0.56 (95 % interval)"]
    low, high = float(whiskers[0][0]), float(whiskers[0][1])
    ticks = [float(t) for t in re.findall(r'text-anchor="end">([\d.]+)</text>', pending)]
    scale = 194 / max(ticks)  # the plot's height over its top tick
    assert low - high == pytest.approx(2 * 0.56 * scale, abs=0.6)


def test_a_bar_s_whisker_stays_within_its_chart() -> None:
    from kubesched.report.svg import bar_chart

    svg = bar_chart("t", ["a", "b"], {"m": [10.0, 1.0]}, errors={"m": [5.0, 3.0]})
    ticks = [float(t) for t in re.findall(r'text-anchor="end">([\d.]+)</text>', svg)]
    assert max(ticks) >= 15  # the axis reaches the top of the highest interval, not just the highest bar
    whiskers = re.findall(r'class="interval" d="M[\d.]+,([\d.]+)V([\d.]+)', svg)
    assert len(whiskers) == 2 and float(whiskers[1][0]) == pytest.approx(36 + 194)  # 1 - 3 drawn from the axis


def test_a_small_sweep_runs_in_process_by_default_and_says_so(tmp_path: Path) -> None:
    sweep = EXAMPLES / "sweeps" / "preemption-plans.yaml"
    lines = _invoke(str(sweep)).output.splitlines()
    assert lines[1].startswith("run in this process (20 variants") and "--workers N" in lines[1]
    assert "run in this process" not in _invoke(str(sweep), "--workers", "1").output  # asked for: a worker
    spec = load_sweep(sweep)
    base = load_scenario(spec.base_path)
    small, note = executor(base, spec, None, False, None, 20)
    assert small.here and note is not None
    # a thousand variants of the demo's 24 pods: a local cluster of a worker per core
    (big, note) = executor(base, spec, None, False, None, 1000)
    assert not big.here and note is None and big.workers == min(1000, os.cpu_count() or 1)
