"""`kubesched whatif` on kubectl dumps of a real-looking cluster: 20 EKS nodes, Deployments in several
namespaces, a DaemonSet, PriorityClasses, PodDisruptionBudgets, and pending pods carrying the message
kube-scheduler wrote on them. Every check is on what a user reads: the JSON result or the table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result

from kubesched.cli.main import cli
from kubesched.testkit.dumps.cluster import ClusterDump
from kubesched.testkit.dumps.workloads import fit_message

NODES = 20
#: what kube-scheduler v1.28's default profile (DefaultPreemption on) wrote on the pending checkout pods
WITH_PREEMPTION = {"No preemption victims found for incoming pod": NODES}


def _node_name(i: int) -> str:
    return f"ip-10-0-{i // 8}-{10 + i}.eu-west-1.compute.internal"


def _dump(tmp_path: Path, preemption: dict[str, int] | None = WITH_PREEMPTION, *, pending: int = 2,
          pdb_blocks_etl: bool = False) -> Path:
    """Every node holds one etl-batch pod (data, batch-low, 1500m) and one web pod (shop, standard,
    2 cpu) next to the node agent (100m): 400m free each. ``pending`` checkout pods (shop, standard,
    1 cpu) wait, each with ``preemption`` as the PostFilter's part of its message (None: none)."""
    dump = ClusterDump()
    for i in range(NODES):
        dump.node(_node_name(i), cpu="4", memory="16Gi", zone=f"eu-west-1{'abc'[i % 3]}", instance_type="m5.xlarge",
                  region="eu-west-1", provider_id=f"aws:///eu-west-1{'abc'[i % 3]}/i-0{i:016x}",
                  address=f"10.0.{i // 8}.{10 + i}")
    nodes: list[str | None] = [_node_name(i) for i in range(NODES)]
    dump.daemonset_pods("aws-node")
    dump.system_classes()
    dump.priority_class("batch-low", 100)
    dump.priority_class("standard", 10000)
    dump.deployment("etl-batch", NODES, nodes, namespace="data", cpu="1500m", memory="2Gi",
                    priority_class="batch-low", priority=100)
    dump.deployment("web", NODES, nodes, namespace="shop", cpu="2", memory="2Gi", priority_class="standard",
                    priority=10000)
    message = fit_message(NODES, {"Insufficient cpu": NODES}, preemption)
    dump.deployment("checkout", pending, [None] * pending, namespace="shop", cpu="1", memory="1Gi",
                    priority_class="standard", priority=10000, pending_message=message)
    if pdb_blocks_etl:
        dump.pdb("etl-batch", "data", {"app": "etl-batch"}, max_unavailable=0, allowed=0, healthy=NODES,
                 expected=NODES)
    path = tmp_path / "cluster.yaml"
    dump.write(path)
    return path


def _whatif(*args: str, output: str = "json") -> Result:
    result = CliRunner().invoke(cli, ["whatif", *args, "-o", output], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    return result


def _json(*args: str) -> dict[str, Any]:
    return json.loads(_whatif(*args).output)


def _impact(diff: dict[str, Any], namespace: str, priority_class: str) -> dict[str, Any]:
    return next(r for r in diff["impact"] if (r["namespace"], r["priorityClass"]) == (namespace, priority_class))


# -- a class given with --apply --------------------------------------------------------------------------
NEW_CLASS = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "batch-critical"},
             "value": 150000, "description": "batch that must finish"}


def test_pods_given_a_class_from_apply_get_its_value(tmp_path: Path) -> None:
    cluster = _dump(tmp_path)
    new_class = tmp_path / "newclass.yaml"
    new_class.write_text(yaml.safe_dump(NEW_CLASS))
    diff = _json(str(cluster), "--apply", str(new_class), "--priority-class", "app=etl-batch:batch-critical")
    etl = {k: p for k, p in diff["changed"]["pods"].items() if k.startswith("data/etl-batch-")}
    assert len(etl) == NODES and {p["priority"] for p in etl.values()} == {150000}
    # the checkout pods (10000) preempt etl-batch pods in the baseline, and none once they are above them
    assert _impact(diff, "data", "batch-low")["preemptedBefore"] == 2
    row = _impact(diff, "data", "batch-critical")
    assert (row["preemptedBefore"], row["preemptedAfter"], row["runningAfter"]) == (0, 0, NODES)
    assert diff["preempted"] == [] and diff["changed"]["rejected"] == []
    assert diff["changed"]["pods"][next(k for k in diff["changed"]["pods"] if k.startswith("shop/checkout-"))][
        "phase"] == "Pending"


def test_a_namespace_given_with_apply_is_not_refused_for_existing_before_its_pods(tmp_path: Path) -> None:
    cluster = _dump(tmp_path)
    namespace = tmp_path / "ns.yaml"
    namespace.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": "data", "labels": {"team": "data"}}}))
    diff = _json(str(cluster), "--apply", str(namespace))
    assert diff["changed"]["rejected"] == []


# -- whether the cluster's scheduler preempts ------------------------------------------------------------
def test_enabling_preemption_on_a_cluster_whose_messages_show_none_compares_without_with(tmp_path: Path) -> None:
    cluster = _dump(tmp_path, preemption=None)  # kube-scheduler ran no PostFilter: no "preemption:" part
    diff = _json(str(cluster), "--enable-preemption")
    assert diff["baselinePreemption"] == {
        "enabled": False, "decidedBy": "pendingPodMessages",
        "reason": "none of the 2 pending pods' messages has kube-scheduler's 'preemption:' clause, which it adds "
                  "whenever DefaultPreemption runs"}
    assert "note" not in diff
    assert diff["summary"]["baseline"]["preemptions"] == 0
    assert [p["victim"].rsplit("-", 1)[0] for p in diff["preempted"]] == ["data/etl-batch-z6vpzt4mpq"] * 2
    assert len(diff["started"]) == 2 and all(p["pod"].startswith("shop/checkout-") for p in diff["started"])
    table = _whatif(str(cluster), "--enable-preemption", output="table").output
    assert "Baseline: preemption off — none of the 2 pending pods' messages has kube-scheduler's 'preemption:'" in (
        " ".join(table.split()))


def test_messages_with_a_preemption_clause_make_a_preempting_baseline(tmp_path: Path) -> None:
    diff = _json(str(_dump(tmp_path)), "--enable-preemption")
    assert diff["baselinePreemption"]["enabled"] is True
    assert diff["baselinePreemption"]["reason"].startswith("2 of the 2 pending pods' messages have kube-scheduler's")
    assert diff["summary"]["baseline"]["preemptions"] == 2 and diff["preempted"] == []
    assert diff["note"].startswith("preemption is already enabled in the baseline (2 of the 2 pending pods' messages")


def test_a_cluster_without_pending_pods_keeps_the_default_profile(tmp_path: Path) -> None:
    diff = _json(str(_dump(tmp_path, pending=0)), "--disable-preemption")
    assert diff["baselinePreemption"]["decidedBy"] == "default" and diff["baselinePreemption"]["enabled"] is True


def test_scheduler_config_decides_the_baseline_when_preemption_is_switched(tmp_path: Path) -> None:
    config = tmp_path / "sched.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler",
                      "plugins": {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}}]}))
    diff = _json(str(_dump(tmp_path)), "--scheduler-config", str(config), "--enable-preemption")
    assert diff["baselinePreemption"] == {"enabled": False, "decidedBy": "schedulerConfig",
                                          "reason": f"--scheduler-config {config} disables DefaultPreemption"}
    assert diff["summary"]["baseline"]["preemptions"] == 0 and len(diff["preempted"]) == 2


def test_without_preemption_the_pending_pods_the_baseline_starts_are_not_said_to_stop(tmp_path: Path) -> None:
    diff = _json(str(_dump(tmp_path)), "--disable-preemption")
    # in the baseline the two checkout pods preempt an etl-batch pod each and run
    checkout = sorted(k for k, p in diff["baseline"]["pods"].items()
                      if k.startswith("shop/checkout-") and p["phase"] == "Running")
    assert len(checkout) == 2
    assert diff["stopped"] == [] and diff["summary"]["stopped"] == 0
    assert [(p["pod"], p["phaseAfter"]) for p in diff["notStarted"]] == [(k, "Pending") for k in checkout]
    assert sorted(p["pod"] for p in diff["keptRunning"]) == sorted(p["victim"] for p in diff["noLongerPreempted"])
    table = " ".join(_whatif(str(_dump(tmp_path)), "--disable-preemption", output="table").output.split())
    assert "Running pods that would stop" not in table
    assert "Pods that would be preempted: none" in table and "┃ victim" not in table  # no empty table
    assert f"Pods the baseline starts that would not start: {checkout[0]}" in table


# -- drains -------------------------------------------------------------------------------------------------
DRAINED = _node_name(0)


def test_a_drained_pod_is_replaced_by_the_pod_its_controller_made_for_it(tmp_path: Path) -> None:
    # baseline: the checkout pods preempt two etl-batch pods, whose ReplicaSet makes two new pods;
    # drained: the node's etl-batch and web pods are evicted at once, before any preemption, and
    # their ReplicaSets make new pods, which draw the generated names the baseline's new pods had
    cluster = _dump(tmp_path)
    in_dump = {f"{o['metadata']['namespace']}/{o['metadata']['name']}"
               for o in yaml.safe_load(cluster.read_text())["items"] if o["kind"] == "Pod"}
    diff = _json(str(cluster), "--drain", DRAINED, "--ignore-daemonsets")
    events = diff["changed"]["events"]
    # a controller makes the new pod as soon as it sees the old one go: before the eviction is logged
    last_eviction = max(i for i, e in enumerate(events) if e["reason"] == "Evicting")
    made_for_the_drain = {e["pod"] for e in events[:last_eviction] if e["reason"] == "Created" and e["pod"] not in in_dump}
    (drain,) = diff["drains"]
    replaced = {p["pod"]: p["replacedBy"]["pod"] for p in drain["pods"] if p["evicted"] is not None}
    assert sorted(k.rsplit("-", 2)[0] for k in replaced) == ["data/etl-batch", "shop/web"]
    assert set(replaced.values()) == made_for_the_drain
    assert all(new.rsplit("-", 1)[0] == old.rsplit("-", 1)[0] for old, new in replaced.items())
    assert any(new in diff["baseline"]["pods"] for new in replaced.values())  # a name the baseline used too
    assert {p["pod"]: p["replacedBy"]["pod"] for p in diff["stopped"]} == replaced


def test_a_drain_blocked_by_a_budget_to_the_end_says_so(tmp_path: Path) -> None:
    cluster = _dump(tmp_path, pdb_blocks_etl=True)
    diff = _json(str(cluster), "--drain", DRAINED, "--ignore-daemonsets")
    (drain,) = diff["drains"]
    assert drain["outcome"] == "running" and drain["finished"] is None
    (blocked,) = [p for p in drain["pods"] if p["evicted"] is None]
    end = diff["changed"]["endTime"]
    assert blocked == {"pod": blocked["pod"], "evicted": None, "blockedBy": "data/etl-batch", "blockedFor": end,
                       "blockedAtEnd": True}
    (evicted,) = [p for p in drain["pods"] if p["evicted"] is not None]
    assert "blockedAtEnd" not in evicted
    table = " ".join(_whatif(str(cluster), "--drain", DRAINED, "--ignore-daemonsets", output="table").output.split())
    assert f"running (still under way when the run ended at {end:g}s)" in table
    assert f"{end:g}s, still blocked at the end of the run" in table
    html = _whatif(str(cluster), "--drain", DRAINED, "--ignore-daemonsets", output="html").output
    assert f"<td>{end:g}, still blocked at the end of the run</td>" in html
    assert "<p>Baseline: preemption on &mdash; 2 of the 2 pending pods&#x27; messages have" in html


def test_a_drain_that_times_out_counts_the_blocking_up_to_its_timeout(tmp_path: Path) -> None:
    diff = _json(str(_dump(tmp_path, pdb_blocks_etl=True)), "--drain", DRAINED, "--ignore-daemonsets",
                 "--drain-timeout", "12s")
    (drain,) = diff["drains"]
    assert (drain["outcome"], drain["finished"]) == ("failed", 12.0) and diff["changed"]["endTime"] > 12
    (blocked,) = [p for p in drain["pods"] if p["evicted"] is None]
    assert blocked["blockedFor"] == 12.0 and "blockedAtEnd" not in blocked
