"""benchmarks/replay_recorded.py's pieces that need no API server: the decision oracle's scores and
preemption criteria, and the synthetic big log (each copy a history of its own, later in time)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import replay_oracle  # noqa: E402
import replay_recorded  # noqa: E402
from replay_oracle import PodSpec, State  # noqa: E402

from kubesched.replay import read_audit_log  # noqa: E402

LOG = Path(__file__).resolve().parents[1] / "replay" / "data" / "kube-apiserver-1.28.7-audit.log"
GI = 2**30


def test_scores_prefer_the_emptier_node_and_report_ties() -> None:
    state = State({"a": (4000, 8 * GI, 110), "b": (4000, 8 * GI, 110), "c": (8000, 8 * GI, 110)})
    pod = PodSpec(1000, GI, 0)
    # c: least (87 + 87) // 2 = 87... the larger cpu node scores higher on LeastAllocated
    assert state.best_by_score(pod) == ["c"]
    state.bind("x", "c", PodSpec(6000, 6 * GI, 0))
    assert state.best_by_score(pod) == ["a", "b"]  # equal nodes: a tie
    state.bind("y", "a", PodSpec(3500, GI, 0))
    assert state.best_by_score(pod) == ["b"]  # a cannot hold it any more
    state.delete("y")
    assert state.best_by_score(pod) == ["a", "b"]


def test_preemption_picks_the_node_with_the_lowest_victims() -> None:
    state = State({"a": (2000, 8 * GI, 110), "b": (2000, 8 * GI, 110)})
    state.bind("low-a", "a", PodSpec(2000, GI, 100))
    state.bind("mid-b", "b", PodSpec(2000, GI, 500))
    assert state.best_for_preemption(PodSpec(1000, GI, 1000)) == ["a"]  # the lower highest victim
    state.bind("low-b", "b", PodSpec(0, 0, 100))
    state.delete("mid-b")
    state.bind("low-b2", "b", PodSpec(2000, GI, 100))
    # both nodes: one victim of priority 100 (the zero-size pod on b is reprieved): a tie
    assert state.best_for_preemption(PodSpec(1000, GI, 1000)) == ["a", "b"]


def test_the_recorded_logs_decisions_are_each_the_only_best_node() -> None:
    events = [json.loads(line) for line in LOG.read_text().splitlines() if line.strip()]
    decisions, last = replay_oracle.decisions(events, "default")
    # every pod of the test log is pinned by a nodeSelector the oracle does not model, so it only
    # checks that each binding and each preemptor's nomination is classified
    assert {d.kind for d in decisions} == {"score"}
    assert len(last) == 14


def test_the_big_log_repeats_the_history_later_under_other_names(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    copies = replay_recorded.big_log(LOG, big, 3 * LOG.stat().st_size / 1e9)
    assert copies == 3
    history = read_audit_log(big)
    counts = history.report.counts
    assert counts["pod creations"] == 3 * 14 and counts["bindings (the reference)"] == 3 * 14
    assert not history.report.skipped  # no duplicate auditID, no pod created twice
    assert counts.get("events out of order (sorted)", 0) == read_audit_log(LOG).report.counts.get(
        "events out of order (sorted)", 0) * 3
    names = {r.pod for r in history.recorded}
    assert "default/web-1" in names and "default/web-1-c2" in names
