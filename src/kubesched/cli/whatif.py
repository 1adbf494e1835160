"""``kubesched whatif``: what would change if ... — simulated twice, reported as a difference."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
import yaml
from rich.console import Console
from rich.markup import escape

from kubesched.analysis.whatif.changes import Changes, drain_options, load_change_objects
from kubesched.analysis.whatif.documents import scenario_documents
from kubesched.analysis.whatif.run import whatif
from kubesched.api.errors import KubeschedError, ManifestError
from kubesched.cli.jsonout import write_json
from kubesched.cli.options import (
    INPUT_PATH,
    add_class_and_config_changes,
    cluster_source_options,
    duration_option,
    load_source,
    one_standard_input,
    output_file_option,
    report_unknown_fields,
    scheduler_config_option,
    seed_option,
    strict_option,
)
from kubesched.cli.tables import Table, make_console
from kubesched.report.html import whatif_report
from kubesched.sim.identity import named


def why_nothing_changed(diff: dict[str, Any]) -> str | None:
    """When the changed run places every pod as the baseline does: the likely reason, for people."""
    if diff.get("note"):
        return str(diff["note"])
    if diff.get("rejected"):  # the changes did not all get in: the table of refusals says which and why
        return (f"admission refused {len(diff['rejected'])} of the objects the changes create "
                "(below): the changed run ran without them")
    if any(diff[k] for k in ("preempted", "noLongerPreempted", "started", "keptRunning", "stopped", "notStarted",
                             "moved")):
        return None
    pods = diff["changed"]["pods"].values()
    priorities = {p["priority"] for p in pods}
    pending = sum(1 for p in diff["baseline"]["pods"].values() if p["phase"] == "Pending")
    reason = "the changes made no difference to where pods run"
    if any(c in ("enable preemption", "disable preemption") for c in diff["changes"]):
        if len(priorities) == 1:
            reason += (f": every pod has priority {priorities.pop()}, and a pod only preempts pods of lower "
                       "priority. Give pods PriorityClasses first (--apply, --priority-class)")
        elif not pending:
            reason += ": no pod is pending in the baseline, so no pod needs to preempt"
    return reason


def baseline_preemption_line(diff: dict[str, Any]) -> str:
    """Whether the baseline preempts, and what says so."""
    preemption = diff["baselinePreemption"]
    return f"Baseline: preemption {'on' if preemption['enabled'] else 'off'} — {escape(preemption['reason'])}."


def blocked_for(entry: dict[str, Any]) -> str:
    """How long a drained pod's eviction was refused; a pod still refused when the run ended was
    blocked for at least that long, not for that long."""
    if "blockedFor" not in entry:
        return ""
    if entry.get("blockedAtEnd"):
        return f"{entry['blockedFor']:g}s, still blocked at the end of the run"
    return f"{entry['blockedFor']:g}s"


def cross_node_reason(entry: dict[str, Any]) -> str:
    """Why a victim on another node than its preemptor's was preempted (CrossNodePreemption)."""
    return "; ".join(f"{n['plugin']}: {n['constraint']} ({n['topologyKey']}={n['value']})"
                     for n in entry.get("namedBy") or ())


#: what each counter of kubesched's opt-in preemption plugins is called in the table output
POLICY_WORDS = {
    "crossNodeAttempts": "attempts that searched pods on other nodes",
    "crossNodePreemptions": "preemptions with victims on other nodes",
    "victimsElsewhere": "victims on other nodes",
    "affinityAttempts": "attempts that weighed keeping a pod for affinity",
    "affinityKept": "preemptions that kept a pod for affinity",
}


def render_policies(console: Console, policies: dict[str, Any] | None) -> None:
    """What kubesched's opt-in preemption plugins did in each run (baseline → changed)."""
    if not policies:
        return
    base, new = policies["baseline"], policies["changed"]
    for plugin in sorted(set(base) | set(new)):
        counts = new.get(plugin) or base.get(plugin) or {}
        parts = [f"{POLICY_WORDS.get(k, k)} {base.get(plugin, {}).get(k, 0)} → {new.get(plugin, {}).get(k, 0)}"
                 for k in counts]
        console.print(f"{plugin}: " + ", ".join(parts))


#: up to this many (namespace, PriorityClass) pairs the impact table lists every one, else the changed ones
IMPACT_ROWS_SHOWN_WHOLE = 20


def render_whatif(console: Console, diff: dict[str, Any]) -> None:
    changes = escape("; ".join(diff["changes"]) or "(no change)")
    console.print(f"[bold]What if[/] {changes} — {escape(diff['scenario'])}, seed {diff['seed']}")
    summary = Table(title="Summary", title_justify="left")
    for col in ("", "baseline", "changed"):
        summary.add_column(col)
    for key in ("scheduled", "pending", "preemptions", "victims"):
        summary.add_row(key, str(diff["baseline"]["summary"][key]), str(diff["changed"]["summary"][key]))
    console.print(summary)
    console.print(baseline_preemption_line(diff))
    reason = why_nothing_changed(diff)
    if reason is not None:
        console.print(f"[yellow]Note:[/] {escape(reason)}.")
    render_rejected(console, diff.get("rejected") or [])
    if diff["preempted"]:
        pre = Table(title=f"Pods that would be preempted ({len(diff['preempted'])})", title_justify="left")
        elsewhere = any(p.get("victimNode", p["node"]) != p["node"] for p in diff["preempted"])
        columns = ["t (s)", "victim", "prio", "preemptor", "node", "why this node", "PDB"]
        if elsewhere:  # CrossNodePreemption: victims on other nodes than the preemptor's
            columns[5:5] = ["victim's node", "why there"]
        for col in columns:
            pre.add_column(col, overflow="fold")
        for p in diff["preempted"]:
            row = [f"{p['time']:g}", named(p, "victim", "baselineVictim"), str(p["victimPriority"]),
                   named(p, "preemptor", "baselinePreemptor"), p["node"]]
            if elsewhere:
                row += [p.get("victimNode", p["node"]), cross_node_reason(p)]
            pre.add_row(*row, p["criterion"], "violated" if p["violatesPDB"] else "")
        console.print(pre)
    else:
        console.print("Pods that would be preempted: none")
    render_policies(console, diff.get("preemptionPolicies"))
    if diff["started"]:
        console.print("Pending pods that would start: " + ", ".join(f"{named(p)} on {p['node']}" for p in diff["started"]))
    if diff["keptRunning"]:
        console.print("Pods that would keep running (preempted or stopped in the baseline): " + ", ".join(
            f"{named(p)} on {p['node']}" for p in diff["keptRunning"]))
    if diff["stopped"]:
        console.print("Running pods that would stop: " + ", ".join(
            f"{named(p)} (on {p['node']}" + (f"; replaced by {p['replacedBy']['pod']} on {p['replacedBy']['node'] or '-'}"
                                             if p.get("replacedBy") else "") + ")" for p in diff["stopped"]))
    if diff["notStarted"]:
        console.print("Pods the baseline starts that would not start: " + ", ".join(
            f"{named(p)} (on {p['node']} in the baseline; {p['phaseAfter']} after)" for p in diff["notStarted"]))
    if diff["moved"]:
        console.print("Pods on another node: " + ", ".join(f"{named(p)} {p['from']} → {p['to']}" for p in diff["moved"]))
    for drain in diff.get("drains", []):
        render_drain(console, drain, diff["changed"]["endTime"])
    changed_rows = [r for r in diff["impact"] if any(r[f"{what}Before"] != r[f"{what}After"]
                                                     for what in ("running", "pending", "preempted"))]
    if len(diff["impact"]) <= IMPACT_ROWS_SHOWN_WHOLE:
        changed_rows = diff["impact"]
    impact = Table(title="Impact per PriorityClass and namespace", title_justify="left")
    for col in ("namespace", "PriorityClass", "running", "pending", "preempted"):
        impact.add_column(col)
    for r in changed_rows:
        impact.add_row(r["namespace"], r["priorityClass"], f"{r['runningBefore']} → {r['runningAfter']}",
                       f"{r['pendingBefore']} → {r['pendingAfter']}", f"{r['preemptedBefore']} → {r['preemptedAfter']}")
    if changed_rows:
        console.print(impact)
    unchanged = len(diff["impact"]) - len(changed_rows)
    if unchanged:
        console.print(f"Impact: {unchanged} (namespace, PriorityClass) pair(s) with no change are not shown "
                      f"({'none changed' if not changed_rows else f'{len(changed_rows)} changed'}; -o json lists all).")


def render_rejected(console: Console, rejected: list[dict[str, Any]]) -> None:
    """The objects admission refused in the changed run only (the WhatIfResult's ``rejected``)."""
    if not rejected:
        return
    table = Table(title=f"Refused by admission in the changed run ({len(rejected)})", title_justify="left")
    for col in ("t (s)", "kind", "namespace", "name", "code", "why"):
        table.add_column(col, overflow="fold")
    for r in rejected:
        table.add_row(f"{r['time']:g}", r["kind"], r["namespace"] or "", r["name"], str(r["code"]),
                      escape(r["reason"]))
    console.print(table)


def render_drain(console: Console, drain: dict[str, Any], end: float) -> None:
    """A drain's outcome and what happened to each of the node's pods (``end``: when the run ended)."""
    took = f" at {drain['finished']:g}s" if drain["finished"] is not None else f" (still under way when the run ended at {end:g}s)"
    console.print(f"Drain of {escape(drain['node'])}: {drain['outcome']}{took}")
    for line in drain["refused"]:
        console.print(f"  refused: {escape(line)}")
    table = Table(title=f"Pods drained from {drain['node']}", title_justify="left")
    for col in ("pod", "evicted at", "blocked by PDB", "blocked for", "replaced by"):
        table.add_column(col, overflow="fold")
    for p in drain["pods"]:
        replaced = p.get("replacedBy")
        table.add_row(p["pod"], "-" if p["evicted"] is None else f"{p['evicted']:g}s", p.get("blockedBy") or "",
                      blocked_for(p),
                      f"{replaced['pod']} on {replaced['node'] or '-'}" if replaced else ("lost" if p.get("lost") else ""))
    for p in drain["skipped"]:
        table.add_row(p["pod"], f"skipped ({p['why']})", "", "", "")
    if drain["pods"] or drain["skipped"]:
        console.print(table)


@click.command()
@click.argument("snapshot", type=INPUT_PATH, required=False)
@cluster_source_options
@click.option("--enable-preemption", is_flag=True,
              help="Preemption on in the changed run. The baseline preempts as the cluster does: as the "
                   "snapshot's scheduler configuration or --scheduler-config says, else as the pending pods' "
                   "messages tell (kube-scheduler adds 'preemption: ...' to them when it preempts), else on; "
                   "the result says which and why.")
@click.option("--disable-preemption", is_flag=True,
              help="Preemption off in the changed run (the baseline as with --enable-preemption).")
@click.option("--apply", "apply_files", multiple=True, type=INPUT_PATH,
              help="Manifests to add or replace (PriorityClasses, PDBs, pods, workloads...); a file, a directory "
                   "or - for standard input. Repeatable.")
@click.option("--priority-class", "priority_classes", multiple=True, metavar="SELECTOR:CLASS",
              help="Re-prioritise pods (and workloads' pod templates): SELECTOR is ns/name, ns/* or labels "
                   "k=v[,k=v]; e.g. 'app=batch:low' or 'default/*:low'. Repeatable.")
@click.option("--cordon", multiple=True, metavar="NODE", help="Cordon a node. Repeatable.")
@click.option("--drain", multiple=True, metavar="NODE",
              help="Drain a node at t=0 as `kubectl drain` does: cordon, then evict its pods through the "
                   "eviction API (PodDisruptionBudgets respected, retried every 5 s). Repeatable.")
@click.option("--force", is_flag=True, help="With --drain: also delete pods that declare no controller.")
@click.option("--ignore-daemonsets", is_flag=True, help="With --drain: skip DaemonSet-managed pods.")
@click.option("--delete-emptydir-data", is_flag=True, help="With --drain: also delete pods with emptyDir volumes.")
@click.option("--grace-period", type=click.IntRange(min=0), default=None,
              help="With --drain: seconds each pod gets to terminate (default: its own; 0: at once).")
@duration_option("--drain-timeout", help="With --drain: give up after this long (default: wait for ever), "
                                         "as kubectl drain's --timeout.")
@scheduler_config_option("KubeSchedulerConfiguration for the changed run.")
@strict_option()
@seed_option()
@duration_option("--until", help="Simulated duration of both runs (default: until nothing more happens).")
@click.option("--output", "-o", type=click.Choice(["table", "json", "html"]), default="table", show_default=True)
@output_file_option("--report", help="Also write the self-contained HTML report here.")
@output_file_option("--save-changed",
                    help="Write the changed cluster as a scenario file, to start the next what-if from it.")
def whatif_cmd(snapshot: str, enable_preemption: bool, disable_preemption: bool, apply_files: tuple[str, ...], priority_classes: tuple[str, ...],
               cordon: tuple[str, ...], drain: tuple[str, ...], scheduler_config: str | None, seed: int | None,
               until: float | None, output: str, report: str | None, save_changed: str | None,
               kubeconfig: str | None, context: str | None, strict: bool, force: bool, ignore_daemonsets: bool,
               delete_emptydir_data: bool, grace_period: int | None, drain_timeout: float | None) -> None:
    """Simulate SNAPSHOT (manifests, a scenario, a `kubectl get ... -A -o yaml` dump or a `kubesched
    snapshot` file; - for standard input) — or a live cluster read through --kubeconfig — as it is and
    with the changes, from the same seed, and report the difference (docs/whatif.md). A pod is the
    same in both runs by its identity (its controller and creation order), not by its generated name:
    one the changed run names otherwise is shown as `new-name (was old-name)`."""
    if enable_preemption and disable_preemption:
        raise click.UsageError("--enable-preemption and --disable-preemption exclude each other")
    preemption = True if enable_preemption else False if disable_preemption else None
    one_standard_input(snapshot, scheduler_config, *apply_files)
    warnings: list[ManifestError] = []
    try:
        options = drain_options(force=force, ignore_daemonsets=ignore_daemonsets,
                                delete_emptydir_data=delete_emptydir_data, grace_period=grace_period,
                                timeout=None if drain_timeout is None else f"{drain_timeout:g}s")
        if not drain and options:
            raise click.UsageError("--force, --ignore-daemonsets, --delete-emptydir-data, --grace-period and "
                                   "--drain-timeout go with --drain")
        changes = Changes(preemption=preemption, apply=load_change_objects(list(apply_files), warnings),
                          cordon=list(cordon), drain=list(drain),
                          drain_options=options)
        add_class_and_config_changes(changes, priority_classes, scheduler_config)
        base = load_source(snapshot, kubeconfig, context)
        report_unknown_fields([*base.warnings, *warnings], strict)
        diff, changed = whatif(base, changes, seed=seed, until=until, keep_changed=save_changed is not None)
    except KubeschedError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    if report:
        Path(report).write_text(whatif_report(diff))
    if save_changed:
        Path(save_changed).write_text(yaml.safe_dump_all(scenario_documents(changed), sort_keys=False))
    if output == "json":
        write_json(diff)
    elif output == "html":
        click.echo(whatif_report(diff), nl=False)
    else:
        render_whatif(make_console(), diff)
        if report:
            click.echo(f"HTML report written to {report}")
