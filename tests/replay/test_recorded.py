"""kubesched replay on an audit log recorded from a real kube-apiserver v1.28.7 while kube-scheduler
v1.28.7 scheduled (tests/replay/data/README.md says how): every pod there is pinned to a node by a
``nodeSelector`` and each preemption's victims are forced (n1's other two pods are guarded by a
PodDisruptionBudget; web-2 needs all of n2), so a correct replay agrees with the recording on where
each pod went and whom each high-priority pod preempted."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubesched.cli.main import cli
from kubesched.replay import read_audit_log

LOG = Path(__file__).parent / "data" / "kube-apiserver-1.28.7-audit.log"
VICTIMS = {"default/batch-n1-2": "default/web-1", "default/batch-n1-3": "default/web-1",
           **{f"default/batch-n2-{i}": "default/web-2" for i in range(4)}}


def _events() -> list[dict[str, Any]]:
    return [json.loads(line) for line in LOG.read_text().splitlines() if line.strip()]


def _run(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["replay", str(LOG), "-o", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_readers_counts_are_what_the_log_holds() -> None:
    events = _events()
    done = [e for e in events if e["stage"] == "ResponseComplete"]
    writes = [e for e in done if e["verb"] not in ("get", "list", "watch")]
    counts = read_audit_log(LOG).report.counts
    assert counts["lines"] == len(events)
    for level, n in Counter(e["level"] for e in events).items():
        assert counts[f"events at {level} level"] == n
    assert counts["events of earlier stages (ignored)"] == len(events) - len(done)
    assert counts["read requests (ignored)"] == len(done) - len(writes)
    subresource = Counter((e["objectRef"]["resource"], e["objectRef"].get("subresource"), e["verb"]) for e in writes)
    assert counts["bindings (the reference)"] == subresource[("pods", "binding", "create")] == 14
    assert counts["evictions"] == subresource[("pods", "eviction", "create")] == 1
    assert counts["pod creations"] == subresource[("pods", None, "create")] == 14
    by_scheduler = [e for e in writes if e["verb"] == "delete" and e["user"]["username"] == "system:kube-scheduler"]
    assert counts["preemptions by the recorded scheduler (the reference)"] == len(by_scheduler) == 6
    assert counts["node creations"] == 3 and counts["node changes"] == 4  # 3 taints taken off, 1 cordon
    history = read_audit_log(LOG).report
    assert not history.skipped and not history.unknown_resources
    assert history.notes == []  # both classes are in the log


def test_the_default_configuration_places_and_preempts_as_recorded() -> None:
    doc = _run()
    pods = {p["pod"]: p for p in doc["pods"]}
    assert len(pods) == 14
    for name, row in pods.items():  # every pod is pinned: the recorded node is the only one
        assert row["recorded"]["node"] == row["replay"]["node"] is not None, name
    assert doc["summary"]["agreement"]["node"] == {"agree": 14, "of": 14, "rate": 1.0}
    recorded = {name for name, p in pods.items() if p["recorded"]["preempted"] is not None}
    replayed = {name: p["replay"]["preemptor"] for name, p in pods.items() if p["replay"]["preempted"] is not None}
    assert recorded == set(VICTIMS)
    assert replayed == VICTIMS
    assert pods["default/web-1"]["replay"]["node"] == "n1" and pods["default/web-2"]["replay"]["node"] == "n2"
    assert pods["default/batch-n3-1"]["recorded"]["evicted"] is not None


def test_without_preemption_the_high_priority_pods_stay_pending() -> None:
    doc = _run("--disable-preemption")
    pods = {p["pod"]: p for p in doc["pods"]}
    for name in ("default/web-1", "default/web-2"):
        assert pods[name]["recorded"]["node"] is not None
        assert pods[name]["replay"]["bound"] is None, name
    assert not [n for n, p in pods.items() if p["replay"]["preempted"] is not None]
    high = next(c for c in doc["byClass"] if c["priorityClass"] == "online-high")
    assert (high["recorded"]["bound"], high["replay"]["notBound"]) == (2, 2)
    assert doc["summary"]["agreement"]["bound"] == {"agree": 12, "of": 14, "rate": pytest.approx(12 / 14, abs=1e-4)}


def test_the_table_output_names_the_pods_that_differ() -> None:
    result = CliRunner().invoke(cli, ["replay", str(LOG), "--disable-preemption"])
    assert result.exit_code == 0, result.output
    assert "Pods whose outcome differs (8 of 14)" in result.stdout
    assert "default/web-1" in result.stdout and "125 lines" in result.stderr
