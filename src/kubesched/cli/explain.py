"""``kubesched explain``: why a pod is pending (or where and why it landed)."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from kubesched.analysis.diagnose import PodDiagnosis, diagnose
from kubesched.api.errors import KubeschedError
from kubesched.cli.jsonout import write_json
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
from kubesched.cli.tables import Table, make_console
from kubesched.k8s.objects import DEFAULT_NAMESPACE, split_key
from kubesched.sim import simulate


def _split(pod: str) -> tuple[str, str]:
    return split_key(pod) if "/" in pod else (DEFAULT_NAMESPACE, pod)


def render_diagnosis(console: Console, d: PodDiagnosis) -> None:
    where = f"on {d.node}" if d.node else "not bound"
    console.print(f"[bold]{d.pod}[/] (priority {d.priority}) is {d.phase}, {where}"
                  + (f", nominated to {d.nominated_node}" if d.nominated_node else ""))
    if d.failed:
        console.print(f"  failed: {escape(d.failed['reason'])} — {escape(d.failed['message'])}")
    if d.pre_filter:
        console.print(f"  rejected before filtering: {escape(d.pre_filter)}")
        for hint in d.pre_filter_hints:
            console.print(f"    hint: {escape(hint)}")
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
                table.add_row(v.node if i == 0 else "", failure["plugin"], failure["reason"],
                              "; ".join(failure.get("hints") or []))
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
        elif d.preemption_if_allowed is not None and d.preemption_if_allowed["outcome"] == "would preempt":
            q = d.preemption_if_allowed
            chosen = next(c for c in q["candidates"] if c["node"] == q["chosen"])
            victims = ", ".join(f"{v['pod']} (priority {v['priority']})" for v in chosen["victims"])
            console.print(f"  preemption would help, but the pod's preemptionPolicy is Never: it would take "
                          f"{q['chosen']}, evicting {victims}; PDB violations: {chosen['pdbViolations']}")
        else:
            console.print(f"  preemption would not help: {p['outcome']}"
                          + (f" — {escape(p['message'])}" if p["message"] else ""))


def _not_found(result: dict[str, Any], namespace: str, name: str) -> str:
    """Why ``namespace/name`` is not there to diagnose: refused by admission, gone, or in another
    namespace (as kubectl would say, with the ``-n`` to use)."""
    key = f"{namespace}/{name}"
    refused = next((r for r in result["rejected"] if r["kind"] == "Pod" and r["name"] == key), None)
    if refused is not None:
        return f"pod {key} was refused by admission ({refused['code']}): {refused['message']}"
    if key in result["pods"]:
        return f"pod {key} is {result['pods'][key]['phase']} at the end of the simulation (try --at)"
    elsewhere = sorted(k for k in result["pods"] if k.split("/", 1)[1] == name)
    if elsewhere:
        hint = ", ".join(f"{k} (-n {k.split('/', 1)[0]})" for k in elsewhere[:5])
        return f'pods "{name}" not found in namespace "{namespace}"; there is {hint}'
    return f'pods "{name}" not found in namespace "{namespace}"'


def _render_pending(console: Console, scheduler: Any, result: dict[str, Any], namespace: str | None) -> None:
    """Every pending pod (of ``namespace``, or of all) with what kube-scheduler would report."""
    table = Table(title="Pending pods", title_justify="left")
    for col in ("pod", "priority", "why"):
        table.add_column(col, overflow="fold")
    rows = 0
    for key, pod in result["pods"].items():
        ns, name = key.split("/", 1)
        if pod["phase"] != "Pending" or (namespace is not None and ns != namespace):
            continue
        d = diagnose(scheduler, ns, name, detail=False)
        why = d.upstream_message or d.pre_filter or ("bound, not started yet" if d.node else "waiting to be tried")
        table.add_row(key, str(pod["priority"]), why)
        rows += 1
    if rows:
        console.print(table)
    else:
        console.print("no pending pod" + (f" in namespace {namespace}" if namespace else ""))


@click.command()
@click.argument("pod", required=False)
@click.argument("scenario", type=INPUT_PATH, required=False)
@click.option("--namespace", "-n", default=None, help="The pod's namespace (default: default), as kubectl's -n.")
@click.option("--all-namespaces", "-A", is_flag=True,
              help="With --all-pending: every namespace, as kubectl's -A.")
@click.option("--all-pending", is_flag=True,
              help="Instead of one POD: every pending pod with the message kube-scheduler would write "
                   "(SCENARIO is then the only argument).")
@cluster_source_options
@duration_option("--at", help="Diagnose the cluster as it is at this simulated time (default: the end).")
@seed_option()
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table", show_default=True)
@scheduler_config_option("KubeSchedulerConfiguration to simulate with, instead of the scenario's own.")
@strict_option()
def explain(pod: str | None, scenario: str | None, namespace: str | None, all_namespaces: bool, all_pending: bool,
            at: float | None, seed: int | None, output: str,
            kubeconfig: str | None, context: str | None, scheduler_config: str | None, strict: bool) -> None:
    """Explain why POD (namespace/name, or name with -n) is pending in SCENARIO (a scenario, a `kubectl get
    ... -A -o yaml` dump or a `kubesched snapshot` file; - for standard input) or in a live cluster read
    through --kubeconfig: every filter that rejects it on every node with what is in the way, the
    message kube-scheduler would write, and whether preemption would help and whom it would cost.
    With --all-pending, every pending pod (of -n NAMESPACE, or -A) with its message."""
    if all_pending:
        if scenario is not None:
            raise click.UsageError("with --all-pending give only SCENARIO (or --kubeconfig), not a POD")
        scenario, pod = pod, None
    elif pod is None:
        raise click.UsageError("give a POD to explain, or --all-pending")
    if all_namespaces and (not all_pending or namespace is not None):
        raise click.UsageError("-A goes with --all-pending and without -n")
    one_standard_input(scenario, scheduler_config)
    if pod is not None and "/" in pod:
        if namespace is not None and namespace != pod.split("/", 1)[0]:
            raise click.UsageError(f"POD {pod!r} names namespace {pod.split('/', 1)[0]!r}, -n says {namespace!r}")
        namespace, name = _split(pod)
    else:
        name = pod or ""
        namespace = namespace or (None if all_namespaces else DEFAULT_NAMESPACE)
    try:
        source = with_scheduler_config(load_source(scenario, kubeconfig, context), scheduler_config)
        report_unknown_fields(source.warnings, strict)
        outcome = simulate(source, seed=seed, until=at, explain=True, owned=True)
        if all_pending:
            _render_pending(make_console(), outcome.scheduler, outcome.result, namespace)
            return
        assert namespace is not None
        if outcome.scheduler.cluster.get("Pod", namespace, name) is None:
            raise KeyError(_not_found(outcome.result, namespace, name))
        diagnosis = diagnose(outcome.scheduler, namespace, name)
    except KeyError as err:
        click.echo(f"error: {err.args[0]}", err=True)
        sys.exit(2)
    except KubeschedError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    if output == "json":
        write_json(diagnosis.to_dict())
        return
    render_diagnosis(make_console(), diagnosis)
