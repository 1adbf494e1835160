"""kubesched replay --follow-recorded: the replay's cluster follows the recorded bindings,
nominations and preemptions, and each recorded decision is set beside what the scheduler under test
would decide on that state (same, tie, differs). On the log recorded from a real kube-apiserver and
kube-scheduler, and on logs the tests write in the audit schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.replay.test_replay import Log, classes

from kubesched.cli.main import cli
from kubesched.replay import read_audit_log
from kubesched.replay.follow import replay_following

DATA = Path(__file__).parent / "data"
RECORDED = DATA / "kube-apiserver-1.28.7-audit.log"


def nominate(log: Log, at: float, name: str, node: str) -> None:
    """kube-scheduler's pods/status patch nominating a preemptor (the stored pod in the response)."""
    log.event(at, "patch", "pods", name, subresource="status", code=200, user="system:kube-scheduler",
              request={"status": {"nominatedNodeName": node}},
              response={"kind": "Pod", "apiVersion": "v1", "metadata": {"name": name, "namespace": "default"},
                        "status": {"phase": "Pending", "nominatedNodeName": node,
                                   "conditions": [{"type": "PodScheduled", "status": "False"}]}})


def follow(path: Path, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["replay", str(path), "--follow-recorded", "-o", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_recorded_log_every_decision_as_recorded() -> None:
    doc = follow(RECORDED)
    summary = doc["decisions"]["summary"]
    assert doc["mode"] == "followRecorded"
    # 14 bindings, each pinned to one node by a nodeSelector: one best node each time
    assert (summary["decisions"], summary["same"], summary["tie"], summary["differs"]) == (14, 14, 0, 0)
    assert summary["agreement"] == {"agree": 14, "of": 14, "rate": 1.0}
    recorded = {r.pod: r.node for r in read_audit_log(RECORDED).recorded}
    assert {r["pod"]: r["recorded"] for r in doc["decisions"]["rows"]} == recorded
    assert all(r["best"] == [r["recorded"]] for r in doc["decisions"]["rows"])
    # web-1 and web-2 were bound after their victims were gone: placements where they fit
    web = [r for r in doc["decisions"]["rows"] if r["pod"].startswith("default/web-")]
    assert [r["kind"] for r in web] == ["placement", "placement"] and doc["run"]["notApplied"] == {}


def tie_and_differs_log(tmp_path: Path) -> Path:
    """Two equal nodes and a bigger one; p0 recorded on the big one (the best), p1 on a node that
    then ties with another, p2 on a node that scores worse than the best."""
    log = Log()
    log.node(0.0, "a", cpu="4")
    log.node(0.0, "b", cpu="4")
    log.node(0.0, "big", cpu="16")
    log.pod(1.0, "p0", "1")
    log.bind(1.1, "p0", "big")
    log.pod(2.0, "p1", "12")  # only big fits it
    log.bind(2.1, "p1", "big")
    log.pod(3.0, "p2", "1")
    log.bind(3.1, "p2", "b")  # a and b tie: big (13 of 16 used) scores lower
    log.pod(4.0, "p3", "1")
    log.bind(4.1, "p3", "big")  # a is now the only best (b holds p2)
    return log.write(tmp_path / "audit.log")


def test_ties_are_counted_apart_and_differences_name_both_scores(tmp_path: Path) -> None:
    doc = follow(tie_and_differs_log(tmp_path))
    rows = {r["pod"]: r for r in doc["decisions"]["rows"]}
    assert rows["default/p0"]["verdict"] == "same" and rows["default/p0"]["best"] == ["big"]
    assert rows["default/p1"]["verdict"] == "same"  # the one node that fits
    assert rows["default/p2"]["verdict"] == "tie" and sorted(rows["default/p2"]["best"]) == ["a", "b"]
    p3 = rows["default/p3"]
    assert p3["verdict"] == "differs" and p3["best"] == ["a"]
    assert p3["recordedScore"] < p3["bestScore"]
    assert p3["why"] == f"big scores {p3['recordedScore']}, a {p3['bestScore']}"
    summary = doc["decisions"]["summary"]
    assert (summary["same"], summary["tie"], summary["differs"]) == (2, 1, 1)
    assert summary["agreement"] == {"agree": 2, "of": 3, "rate": 0.6667}  # ties left out
    assert summary["sameOrTie"] == {"agree": 3, "of": 4, "rate": 0.75}
    # the cluster followed the recording: p3 went where it was recorded, not where it was best
    table = CliRunner().invoke(cli, ["replay", str(tmp_path / "audit.log"), "--follow-recorded"])
    assert table.exit_code == 0, table.output
    assert "Decisions that differ (1)" in table.stdout and "big scores" in table.stdout
    report = tmp_path / "follow.html"
    assert CliRunner().invoke(cli, ["replay", str(tmp_path / "audit.log"), "--follow-recorded", "--report",
                                    str(report)]).exit_code == 0
    page = report.read_text()
    assert "<h2>Recorded decisions</h2>" in page and "1 of 4 decision(s) differ" in page
    assert f"big scores {p3['recordedScore']}, a {p3['bestScore']}" in page and "<svg" in page


def preemption_log(tmp_path: Path, victim_node: str) -> Path:
    """Two 4-cpu nodes each full of a 3-cpu batch pod; an online pod arrives and the recorded
    scheduler preempts the batch pod on ``victim_node``, nominates web there and binds it."""
    log = Log()
    classes(log)
    log.node(0.0, "n1")
    log.node(0.0, "n2")
    log.pod(1.0, "batch-1", "3", "batch", 100)
    log.bind(1.2, "batch-1", "n1")
    log.pod(1.5, "batch-2", "3", "batch", 100)
    log.bind(1.7, "batch-2", "n2")
    log.pod(5.0, "web", "2", "online", 1000)
    log.delete(5.1, "batch-1" if victim_node == "n1" else "batch-2", user="system:kube-scheduler")
    nominate(log, 5.2, "web", victim_node)
    log.bind(6.0, "web", victim_node)
    return log.write(tmp_path / "audit.log")


@pytest.mark.parametrize("victim_node", ["n1", "n2"])
def test_preemption_is_asked_before_its_victims_go(tmp_path: Path, victim_node: str) -> None:
    doc = follow(preemption_log(tmp_path, victim_node))
    rows = {(r["pod"], r["kind"]): r for r in doc["decisions"]["rows"]}
    preemption = rows[("default/web", "preemption")]
    # asked when the victim was still there: nothing fits, the two candidates equal on every criterion
    assert preemption["time"] == 5.1 and preemption["would"] == "preemption"
    assert preemption["verdict"] == "tie" and sorted(preemption["best"]) == ["n1", "n2"]
    # then bound to its nominated node: a cycle takes a nominated node that fits without scoring
    bound = rows[("default/web", "nominated node")]
    assert bound["verdict"] == "same" and bound["best"] == [victim_node]
    assert doc["decisions"]["summary"]["byKind"]["preemption"]["tie"] == 1


def test_preemption_where_the_pod_fits_differs(tmp_path: Path) -> None:
    log = Log()
    classes(log)
    log.node(0.0, "n1")
    log.node(0.0, "n2")
    log.pod(1.0, "batch-1", "3", "batch", 100)
    log.bind(1.2, "batch-1", "n1")
    log.pod(5.0, "web", "2", "online", 1000)
    log.delete(5.1, "batch-1", user="system:kube-scheduler")
    nominate(log, 5.2, "web", "n1")
    log.bind(6.0, "web", "n1")
    doc = replay_following(read_audit_log(log.write(tmp_path / "audit.log"), follow=True))
    preemption = next(r for r in doc["decisions"]["rows"] if r["kind"] == "preemption")
    assert preemption["verdict"] == "differs" and preemption["would"] == "score" and preemption["best"] == ["n2"]
    assert preemption["why"] == "the pod fits without preemption (score: n2)"


def test_bad_combinations_are_refused(tmp_path: Path) -> None:
    runner = CliRunner()
    openb = runner.invoke(cli, ["replay", str(DATA / "openb"), "--follow-recorded"])
    assert openb.exit_code == 2 and "openb trace has none" in openb.output
    log = Log()
    log.node(0.0, "n1")
    log.pod(1.0, "p", "1")  # never bound: nothing to follow
    empty = runner.invoke(cli, ["replay", str(log.write(tmp_path / "audit.log")), "--follow-recorded"])
    assert empty.exit_code == 2 and "records no scheduler decision" in empty.output
