"""``kubesched replay``: a recorded history played again under another configuration, and
compared with what happened."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from kubesched.analysis.grouping import POOL_LABELS
from kubesched.analysis.whatif.apply import apply_changes, check_changes
from kubesched.analysis.whatif.changes import Changes, load_change_objects
from kubesched.api.errors import KubeschedError, ManifestError
from kubesched.api.loader import load_scenario
from kubesched.cli.extras import require_extra
from kubesched.cli.jsonout import write_json
from kubesched.cli.options import (
    add_class_and_config_changes,
    output_file_option,
    report_unknown_fields,
    scheduler_config_option,
    seed_option,
)
from kubesched.cli.replay_decisions import render_decisions
from kubesched.cli.tables import Table, make_console
from kubesched.replay import History, read_audit_log, read_openb, replay
from kubesched.replay.follow import replay_following
from kubesched.replay.timeline import Window
from kubesched.report.decisions_report import decisions_report
from kubesched.report.replay_report import differs, rate_text, replay_report
from kubesched.sweep.replay_table import write_replay_parquet

#: rows of the table of pods whose outcome differs (``-o json`` has every pod)
DIFFERING_ROWS = 30


def _format_of(path: Path, given: str) -> str:
    if given != "auto":
        return given
    if path.suffix.lower() == ".csv" or (path.is_dir() and any(path.glob("openb_pod_list_*.csv"))):
        return "openb"
    return "audit"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:g}s"


def _outcome(side: dict[str, Any]) -> str:
    if side.get("rejected"):
        return "rejected"
    if side.get("keptRunning"):
        return "not created again: its earlier pod still ran"
    if side.get("notCreated"):
        return "not made by its controller"
    if side["bound"] is None:
        return "not bound"
    where = (f"{side['pod']} on " if side.get("pod") else "") + (side["node"] or "bound")
    text = f"{where} after {side['waited']:g}s"
    if side.get("preempted") is not None:
        text += f", preempted at {side['preempted']:g}s"
    if side.get("evicted") is not None:
        text += f", evicted at {side['evicted']:g}s"
    return text


def render_replay(console: Console, doc: dict[str, Any]) -> None:
    history = doc["history"]
    changes = "; ".join(doc["changes"]) or "the default scheduler configuration"
    live = doc["run"].get("live")
    against = (f"against {escape(live['server'])} at {live['speed']:g}x ({live['writes']} writes, "
               f"{live['retries']} retried, {len(doc['run']['rejected'])} refused)") if live else f"seed {doc['seed']}"
    console.print(f"[bold]Replay[/] of {escape(history['source'])} ({history['format']}) from {escape(doc['start'])}, "
                  f"{doc['until']:g}s, with {escape(changes)}; {against}")
    summary = doc["summary"]
    agreement = Table(title=f"Agreement with the recording ({summary['pods']} pods)", title_justify="left")
    for col in ("", "agreement"):
        agreement.add_column(col)
    agreement.add_row("bound or not by the end", rate_text(summary["agreement"]["bound"]))
    agreement.add_row("same node (bound in both)", rate_text(summary["agreement"]["node"]))
    agreement.add_row("same node pool", rate_text(summary["agreement"]["pool"]))
    console.print(agreement)
    table = Table(title="By PriorityClass: recorded → replay", title_justify="left")
    for col in ("PriorityClass", "pods", "bound", "not bound", "wait p50", "wait p95", "wait max", "preempted",
                "evicted"):
        table.add_column(col)
    for row in [*doc["byClass"], {"priorityClass": "all", "pods": summary["pods"], "recorded": summary["recorded"],
                                  "replay": summary["replay"]}]:
        rec, rep = row["recorded"], row["replay"]
        table.add_row(row["priorityClass"], str(row["pods"]), f"{rec['bound']} → {rep['bound']}",
                      f"{rec['notBound']} → {rep['notBound']}",
                      *(f"{_seconds(rec['waited'][q])} → {_seconds(rep['waited'][q])}" for q in ("p50", "p95", "max")),
                      f"{rec['preempted']} → {rep['preempted']}", f"{rec['evicted']} → {rep['evicted']}")
    console.print(table)
    different = [r for r in doc["pods"] if differs(r)]
    if not different:
        console.print("Every pod was bound or left pending as recorded, on its recorded node where the recording says.")
        return
    pods = Table(title=f"Pods whose outcome differs ({len(different)} of {summary['pods']}"
                       + (f"; the first {DIFFERING_ROWS}, -o json has all" if len(different) > DIFFERING_ROWS else "")
                       + ")", title_justify="left")
    for col in ("pod", "PriorityClass", "created", "recorded", "replay"):
        pods.add_column(col, overflow="fold")
    for row in different[:DIFFERING_ROWS]:
        pods.add_row(row["pod"], row["priorityClass"], f"{row['created']:g}s", _outcome(row["recorded"]),
                     _outcome(row["replay"]))
    console.print(pods)


def _read(history: str, fmt: str, snapshot: str | None, nodes: str | None, window: Window, seed: int,
          warnings: list[ManifestError], follow: bool = False) -> History:
    path = Path(history)
    kind = _format_of(path, fmt)
    if kind == "openb":
        if snapshot:
            raise click.UsageError("--snapshot goes with an audit log (an openb trace has its own node list: --nodes)")
        if follow:
            raise click.UsageError("--follow-recorded follows a recorded scheduler's bindings: an openb trace "
                                   "has none (give an audit log)")
        return read_openb(path, nodes=nodes, window=window, seed=seed)
    if nodes:
        raise click.UsageError("--nodes goes with an openb trace")
    objects = []
    if snapshot:
        loaded = load_scenario(snapshot)
        warnings.extend(loaded.warnings)
        objects = loaded.objects
    return read_audit_log(path, snapshot=objects, window=window, seed=seed, follow=follow)


@click.command(name="replay")
@click.argument("history", type=click.Path(exists=True))
@click.option("--format", "fmt", type=click.Choice(["auto", "audit", "openb"]), default="auto", show_default=True,
              help="What HISTORY is: an API server audit log (a file of audit.k8s.io/v1 Events, one per line, "
                   "gzipped or not, or a directory of rotated ones) or an openb trace (openb_pod_list_*.csv, or "
                   "its directory). auto: openb for a .csv or a directory with one, else audit.")
@click.option("--snapshot", type=click.Path(exists=True), default=None,
              help="Audit log: a dump (kubectl get ... -o yaml, kubesched snapshot) that gives the pod specs a "
                   "Metadata-level log lacks, and the nodes, classes, budgets and running pods there before the "
                   "log begins.")
@click.option("--nodes", type=click.Path(exists=True, dir_okay=False), default=None,
              help="openb: the node list (default: openb_node_list_all_node.csv beside the pod list).")
@click.option("--from", "start", metavar="TIME", default=None,
              help="Replay from this moment: an RFC 3339 time (audit log), a second of the trace (openb), or a "
                   "duration from the first event (30m). What happened before is the starting cluster.")
@click.option("--to", "end", metavar="TIME", default=None, help="Replay to this moment (as --from); default: the last event.")
@click.option("--enable-preemption", is_flag=True, help="Replay with DefaultPreemption on.")
@click.option("--disable-preemption", is_flag=True, help="Replay with DefaultPreemption off.")
@click.option("--apply", "apply_files", multiple=True, type=click.Path(exists=True),
              help="Manifests to add at the start (PriorityClasses, PDBs, nodes...). Repeatable.")
@click.option("--priority-class", "priority_classes", multiple=True, metavar="SELECTOR:CLASS",
              help="Give the selected pods another PriorityClass (ns/name, ns/* or k=v[,k=v]), as whatif does. "
                   "Repeatable.")
@click.option("--cordon", multiple=True, metavar="NODE", help="Keep a node cordoned from the start. Repeatable.")
@scheduler_config_option("The KubeSchedulerConfiguration under test (default: kube-scheduler's defaults).")
@seed_option("The replay's seed (default 0).")
@click.option("--pool-label", "pool_label", metavar="KEY", default=None,
              help="The node label whose value is a node's pool (default: the first of the cloud providers' "
                   "node-pool labels and node.kubernetes.io/instance-type that a node has).")
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Play the history against this kubeconfig's API server (a test cluster: it WRITES there: "
                   "nodes, pods, classes, budgets, workloads) while the scheduler running there places the pods; "
                   "then read the bindings back and compare. Needs --speed.")
@click.option("--context", default=None, help="With --kubeconfig: the kubeconfig context (default: its current one).")
@click.option("--speed", type=float, default=None, metavar="X",
              help="With --kubeconfig: send the writes at X times the recorded pace (1: as recorded; 10: a "
                   "recorded hour in 6 minutes). A simulated replay has no pace (its clock jumps from event to "
                   "event), so --speed without --kubeconfig is refused.")
@click.option("--settle", type=float, default=5.0, show_default=True, metavar="SECONDS",
              help="With --kubeconfig: wall seconds to wait after the window's end before reading the bindings back.")
@click.option("--follow-recorded", "follow_recorded", is_flag=True,
              help="Check the recording decision by decision: the replay's cluster follows the recording (each "
                   "recorded binding, nomination and preemption applied as recorded) and at each recorded "
                   "decision the scheduler under test is asked what it would decide on that state (filters and "
                   "scores; the preemption dry run when no node fits). Reports per decision whether the recorded "
                   "node is its one best node (same), one of several equally best (tie: the recorded scheduler "
                   "picked at random) or not (differs, with both nodes' scores).")
@output_file_option("--report", help="Also write the self-contained HTML report here: agreement, time to bind by "
                    "PriorityClass, pending pods over time recorded and replayed, and the pods (those that differ "
                    "first).")
@output_file_option("--parquet", help="Also write one row per pod (recorded node, time to bind, deletion, "
                    "eviction, preemption beside the replay's) as Parquet, the summary in the file's metadata "
                    "(needs the sweep extra).")
def replay_cmd(history: str, fmt: str, snapshot: str | None, nodes: str | None, start: str | None, end: str | None,
               enable_preemption: bool, disable_preemption: bool, apply_files: tuple[str, ...],
               priority_classes: tuple[str, ...], cordon: tuple[str, ...], scheduler_config: str | None,
               seed: int | None, pool_label: str | None, kubeconfig: str | None, context: str | None,
               speed: float | None, settle: float, follow_recorded: bool, output: str, report: str | None,
               parquet: str | None) -> None:
    """Replay a recorded HISTORY (an API server audit log, or Alibaba's openb GPU trace) under another
    scheduler configuration, and compare each pod's outcome with the recorded one (docs/replay.md).

    The recorded arrivals, deletions and node changes are the replay's steps; the scheduler under test
    makes every placement (the recorded bindings are the reference). The report gives the agreement
    with the recording (bound or not, same node, same node pool), time to bind by PriorityClass, and
    preemptions and evictions by class. What was read and skipped (truncated lines, duplicates,
    unknown resources...) is written on stderr and is in -o json's `history`.

    With --kubeconfig FILE --speed X the history is written to a real API server (a test cluster) at X
    times the recorded pace, and the scheduler running there is the one compared; the scheduler
    changes (--scheduler-config, preemption) are then that scheduler's to configure and are refused."""
    if enable_preemption and disable_preemption:
        raise click.UsageError("--enable-preemption and --disable-preemption exclude each other")
    if speed is not None and kubeconfig is None:
        raise click.UsageError("--speed paces the writes to a real API server: give --kubeconfig FILE too (a "
                               "simulated replay has no pace: its clock jumps from one event to the next)")
    if kubeconfig is not None:
        if speed is None:
            raise click.UsageError("--kubeconfig needs --speed X (1: the recorded pace)")
        if speed <= 0:
            raise click.UsageError(f"--speed {speed:g}: expected a positive factor")
        if scheduler_config or enable_preemption or disable_preemption:
            raise click.UsageError("with --kubeconfig the cluster's own scheduler places the pods: configure it "
                                   "there (--scheduler-config, --enable-preemption and --disable-preemption are "
                                   "for a simulated replay)")
        require_extra("--kubeconfig", "kube", ("kubernetes",))
    if follow_recorded and (kubeconfig is not None or parquet):
        raise click.UsageError("--follow-recorded replays in the simulator and reports decisions, not pods: it "
                               "goes with neither --kubeconfig nor --parquet")
    if parquet:
        require_extra("kubesched replay --parquet", "sweep", ("pyarrow",))
    warnings: list[ManifestError] = []
    try:
        read = _read(history, fmt, snapshot, nodes, Window(start, end), seed or 0, warnings, follow_recorded)
        changes = Changes(preemption=True if enable_preemption else False if disable_preemption else None,
                          apply=load_change_objects(list(apply_files), warnings), cordon=list(cordon))
        add_class_and_config_changes(changes, priority_classes, scheduler_config)
        report_unknown_fields(warnings, False)
        for line in read.report.lines():
            click.echo(line, err=True)
        check_changes(read.scenario, changes)
        _, scenario = apply_changes(read.scenario, changes)
        pools = (pool_label,) if pool_label else POOL_LABELS
        if kubeconfig is not None and speed is not None:
            from kubesched.replay.live import live_transport, replay_live

            doc = replay_live(read, scenario, transport=live_transport(kubeconfig, context), speed=speed,
                              pool_labels=pools, changes=changes.describe(), settle=settle)
        elif follow_recorded:
            doc = replay_following(read, scenario, seed=seed, changes=changes.describe())
        else:
            doc = replay(read, scenario, seed=seed, pool_labels=pools, changes=changes.describe())
    except KubeschedError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    if report:
        Path(report).write_text(decisions_report(doc) if follow_recorded else replay_report(doc), encoding="utf-8")
    if parquet:
        write_replay_parquet(doc, parquet)
    if output == "json":
        write_json(doc)
    elif follow_recorded:
        render_decisions(make_console(), doc)
    else:
        render_replay(make_console(), doc)
