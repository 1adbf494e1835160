"""``kubesched explain``: why a pod is pending (or where and why it landed)."""

from __future__ import annotations

import json
import sys

import click
from rich.console import Console
from rich.markup import escape

from kubesched.analysis.diagnose import PodDiagnosis, diagnose
from kubesched.api.errors import KubeschedError
from kubesched.cli.options import (
    INPUT_PATH,
    cluster_source_options,
    duration_option,
    load_source,
    one_standard_input,
    report_unknown_fields,
    scheduler_config_option,
    seed_option,
    strict_option,
    with_scheduler_config,
)
from kubesched.cli.tables import Table
from kubesched.k8s.objects import DEFAULT_NAMESPACE, split_key
from kubesched.sim import simulate


def _split(pod: str) -> tuple[str, str]:
    return split_key(pod) if "/" in pod else (DEFAULT_NAMESPACE, pod)


def render_diagnosis(console: Console, d: PodDiagnosis) -> None:
    where = f"on {d.node}" if d.node else "not bound"
    console.print(f"[bold]{d.pod}[/] (priority {d.priority}) is {d.phase}, {where}"
                  + (f", nominated to {d.nominated_node}" if d.nominated_node else ""))
    if d.pre_filter:
        console.print(f"  rejected before filtering: {escape(d.pre_filter)}")
    fitting = [v.node for v in d.verdicts if v.fits]
    if d.verdicts:
        console.print(f"  fits {len(fitting)} of {len(d.verdicts)} nodes"
                      + (f": {', '.join(fitting[:10])}" + (" ..." if len(fitting) > 10 else "") if fitting else ""))
    rejected = sorted((v for v in d.verdicts if not v.fits), key=lambda v: v.node)
    if rejected:
        table = Table(title="Every filter that rejects the pod, per node", title_justify="left")
        for col in ("node", "plugin", "reason", "what would have to change"):
            table.add_column(col, overflow="fold")
        for v in rejected:
            for i, failure in enumerate(v.failures):
                hint = "; ".join(v.hints) if i == 0 else ""
                table.add_row(v.node if i == 0 else "", failure["plugin"], failure["reason"], hint)
        console.print(table)
    if d.upstream_message:
        console.print(f"  kube-scheduler would report: {escape(d.upstream_message)}")
    p = d.preemption
    if p is not None:
        if p["outcome"] == "would preempt":
            chosen = next(c for c in p["candidates"] if c["node"] == p["chosen"])
            victims = ", ".join(f"{v['pod']} (priority {v['priority']})" for v in chosen["victims"])
            console.print(f"  preemption would help: on {p['chosen']} (picked by {p['criterion']}), "
                          f"evicting {victims}; PDB violations: {chosen['pdbViolations']}")
            if len(p["candidates"]) > 1:
                console.print("  other candidates: " + "; ".join(
                    f"{c['node']}: {len(c['victims'])} victim(s)" for c in p["candidates"] if c["node"] != p["chosen"]))
        else:
            console.print(f"  preemption would not help: {p['outcome']}"
                          + (f" — {escape(p['message'])}" if p["message"] else ""))


@click.command()
@click.argument("pod")
@click.argument("scenario", type=INPUT_PATH, required=False)
@cluster_source_options
@duration_option("--at", help="Diagnose the cluster as it is at this simulated time (default: the end).")
@seed_option()
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table", show_default=True)
@scheduler_config_option("KubeSchedulerConfiguration to simulate with, instead of the scenario's own.")
@strict_option()
def explain(pod: str, scenario: str | None, at: float | None, seed: int | None, output: str,
            kubeconfig: str | None, context: str | None, scheduler_config: str | None, strict: bool) -> None:
    """Explain why POD (namespace/name or name) is pending in SCENARIO (a scenario or a snapshot of
    manifests, e.g. `kubectl get nodes,pods,pdb,priorityclasses -A -o yaml`; - for standard input) or in a
    live cluster read through --kubeconfig: every filter that rejects it on every node, what would have to change, and
    whether preemption would help and whom it would cost."""
    namespace, name = _split(pod)
    one_standard_input(scenario, scheduler_config)
    try:
        source = with_scheduler_config(load_source(scenario, kubeconfig, context), scheduler_config)
        report_unknown_fields(source.warnings, strict)
        outcome = simulate(source, seed=seed, until=at, explain=True)
        diagnosis = diagnose(outcome.scheduler, namespace, name)
    except KeyError as err:
        click.echo(f"error: {err.args[0]}", err=True)
        sys.exit(2)
    except KubeschedError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    if output == "json":
        click.echo(json.dumps(diagnosis.to_dict(), indent=2))
        return
    render_diagnosis(Console(highlight=False), diagnosis)
