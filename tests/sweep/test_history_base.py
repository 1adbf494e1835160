"""A recorded history as a sweep's and a plan's base: each variant replays it under its own
configuration and seed, and its metrics are the replay's (agreement with the recording, node-hours,
GPU allocation over the arrived workload for the openb trace)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import yaml
from click.testing import CliRunner

from kubesched.cli.main import cli

DATA = Path(__file__).resolve().parents[1] / "replay" / "data"
AUDIT_LOG = DATA / "kube-apiserver-1.28.7-audit.log"


def _file(tmp_path: Path, kind: str, spec: dict[str, Any]) -> Path:
    shutil.copytree(DATA / "openb", tmp_path / "openb", dirs_exist_ok=True)
    shutil.copy(AUDIT_LOG, tmp_path / "audit.log")
    path = tmp_path / f"{kind.lower()}.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "kubesched.io/v1alpha1", "kind": kind, "metadata": {"name": "h"},
                                    "spec": spec}))
    return path


def _run(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_a_sweep_over_the_recorded_audit_log_replays_it_per_configuration(tmp_path: Path) -> None:
    sweep = _file(tmp_path, "Sweep", {"base": {"history": "audit.log"}, "seeds": [0, 1],
                                      "changes": {"as-is": {}, "no-preemption": {"disablePreemption": True}}})
    result = _run("sweep", str(sweep), "--local", "-o", "json", "--out", str(tmp_path / "out"))
    assert "read " in result.stderr and "14 pods compared" in result.stderr  # the reader's account, as replay's
    document = json.loads(result.stdout)
    assert document["base"] == {"history": str(tmp_path / "audit.log"), "format": "audit"}
    by_name = {c["configuration"]: c["metrics"] for c in document["configurations"]}
    as_is, off = by_name["change=as-is"], by_name["change=no-preemption"]
    # as recorded: every pod bound where it was, the same six preempted
    assert as_is["agreementBound"]["mean"] == as_is["agreementNode"]["mean"] == 1.0
    assert as_is["victims"]["mean"] == 6 and as_is["pending"]["mean"] == 0
    # without preemption the two online pods stay pending: 12 of 14 as recorded
    assert off["agreementBound"]["mean"] == round(12 / 14, 4) and off["preemptions"]["mean"] == 0
    assert off["pending"]["mean"] == 2
    # three nodes over the whole window; no GPU, so no GPU metric
    assert as_is["nodeHours"]["mean"] > 0 and "gpuArrived" not in as_is
    # each variant's kept result is the ReplayResult `kubesched replay` prints for that seed and change
    kept = json.loads((tmp_path / "out" / "results" / "change=no-preemption,seed=1.json").read_text())
    replayed = json.loads(_run("replay", str(AUDIT_LOG), "--disable-preemption", "--seed", "1", "-o", "json").stdout)
    assert kept["kind"] == "ReplayResult"
    for key in ("summary", "byClass", "pods", "run", "seed", "until"):
        assert kept[key] == replayed[key], key


def test_a_sweep_over_the_openb_excerpt_plots_gpu_allocation_over_arrived_workload(tmp_path: Path) -> None:
    sweep = _file(tmp_path, "Sweep", {"base": {"history": "openb"}, "seeds": [0, 1],
                                      "changes": {"as-is": {}, "no-preemption": {"disablePreemption": True}}})
    result = _run("sweep", str(sweep), "--local", "-o", "json", "--parquet", str(tmp_path / "s.parquet"),
                  "--report", str(tmp_path / "s.html"))
    document = json.loads(result.stdout)
    for configuration in document["configurations"]:
        metrics = configuration["metrics"]
        assert metrics["agreementBound"]["n"] == 2 and metrics["agreementNode"]["mean"] is None  # no node names
        curve = configuration["gpuAllocationCurve"]
        assert curve["arrived"][:3] == [0.05, 0.1, 0.15] and curve["arrived"][-1] <= metrics["gpuArrived"]["mean"]
        # what is allocated has arrived (the arrived workload reaches a point by at most one pod's
        # GPUs past it: 8 of the excerpt's 72), and fits
        for x, y in zip(curve["arrived"], curve["allocated"], strict=True):
            assert 0 <= y["mean"] <= min(x + 8 / 72, 1.0) + 1e-9
        assert 0 < metrics["gpuAllocationAtCapacity"]["mean"] <= metrics["gpuAllocationPeak"]["mean"] <= 1
    off = next(c for c in document["configurations"] if c["configuration"] == "change=no-preemption")
    assert off["metrics"]["preemptions"]["mean"] == 0
    table = pq.read_table(tmp_path / "s.parquet").to_pylist()
    assert [r["id"] for r in table] == [v["id"] for v in document["variants"]]
    assert [r["agreementBound"] for r in table] == [v["metrics"]["agreementBound"] for v in document["variants"]]
    assert table[0]["gpuAllocationCurve.allocated"] == document["variants"][0]["metrics"]["gpuAllocationCurve"]["allocated"]
    page = (tmp_path / "s.html").read_text()
    assert "GPU allocation against arrived GPU workload" in page and "arrived GPU workload / GPU capacity" in page
    assert "history " in page


def test_a_plan_over_a_history_finds_the_nodes_the_recorded_pods_need(tmp_path: Path) -> None:
    # the log's batch pods are pinned to n1, n2 and n3 by nodeSelector: with n3 left out, its four stay
    # pending. From 8 s on, the nodes are the window's starting cluster (the pool's nodes are those)
    plan = _file(tmp_path, "Plan", {"base": {"history": "audit.log", "from": "8s"}, "seeds": [0],
                                    "nodePool": {"selector": {"matchLabels": {"kubernetes.io/os": "linux"}},
                                                 "min": 1, "max": 3},
                                    "goals": ["pending == 0"]})
    document = json.loads(_run("plan", str(plan), "--local", "-o", "json").stdout)
    assert document["answer"] == 3
    assert [r["count"] for r in document["rounds"]] == [3, 1, 2]
    assert document["oneFewerFails"][0]["goal"] == "pending == 0"


def test_axes_a_replay_cannot_take_are_refused_naming_the_field(tmp_path: Path) -> None:
    def refused(spec: dict[str, Any]) -> str:
        result = CliRunner().invoke(cli, ["sweep", str(_file(tmp_path, "Sweep", spec)), "--local"])
        assert result.exit_code == 2, result.output
        return str(result.stderr)

    assert "spec.arrivalRate: not with a history base" in refused({"base": {"history": "openb"}, "arrivalRate": [2]})
    assert "spec.until: not with a history base: a history runs to its window's end" in refused(
        {"base": {"history": "openb"}, "until": "1h"})
    assert "spec.base.snapshot: a snapshot goes with an audit log" in refused(
        {"base": {"history": "openb", "snapshot": "audit.log"}})
    assert "spec.base.history: no such file or directory" in refused({"base": {"history": "nowhere.log"}})
    assert "spec.base.window: unknown field" in refused({"base": {"history": "audit.log", "window": 1}})
