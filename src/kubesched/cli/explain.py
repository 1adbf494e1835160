"""``kubesched explain``: why a pod is pending (or where and why it landed)."""

from __future__ import annotations

import os
import sys
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from kubesched.analysis.diagnose import (
    NodeVerdict,
    PodDiagnosis,
    diagnose,
    missing_pod_text,
    natural_key,
    node_groups,
)
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


#: up to this many nodes, the table output lists each node by default (``--nodes auto``)
NODE_ROWS_UP_TO = 10
#: the node names a group's row shows; a group of at most this many nodes is listed by name
GROUP_EXAMPLES = 3
#: the distinct hints a group's row shows per failure, the most frequent first
GROUP_HINTS = 2


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def _moment(at: dict[str, Any]) -> str:
    return f"at t={at['time']:g}s ({'end of the run' if at['endOfRun'] else '--at'})"


def _state(d: PodDiagnosis) -> str:
    if d.node:
        return f"{d.phase} on {d.node}"
    return f"{d.phase}, " + (f"nominated to {d.nominated_node}" if d.nominated_node else "not bound")


def _victims(victims: list[dict[str, Any]], node: str | None = None) -> str:
    """The pods with their priorities, and their node where it is not ``node``."""
    return ", ".join(f"{v['pod']} (priority {v['priority']}"
                     + (f", on {v['node']})" if v.get("node") and v["node"] != node else ")") for v in victims)


def _where(victims: list[dict[str, Any]], node: str | None) -> str:
    """"on NODE" when every victim ran on ``node`` (DefaultPreemption's), else "for NODE" (the
    victims' own nodes are named with them)."""
    return "on" if all(v.get("node", node) == node for v in victims) else "for"


def _render_notes(console: Console, candidate: dict[str, Any], indent: str = "    ") -> None:
    """What kubesched's opt-in preemption plugins noted on a candidate: the victims on other nodes
    and what named them (CrossNodePreemption), the pod kept for the preemptor's affinity
    (AffinityAwarePreemption)."""
    node = candidate["node"]
    for v in candidate.get("victimsElsewhere") or ():
        why = "; ".join(f"{n['plugin']}: {n['constraint']}, {n['topologyKey']}={n['value']} shared with {node}"
                        for n in v["namedBy"])
        console.print(f"{indent}cross-node victim {escape(v['pod'])} on {v['node']}: counted in {node}'s domain "
                      f"({escape(why)})")
    if "keptForAffinity" in candidate:
        kept = candidate["keptForAffinity"]
        if kept is not None:
            console.print(f"{indent}kept {escape(kept['pod'])} (priority {kept['priority']}) on {node} for the pod's "
                          "required pod affinity (DefaultPreemption's dry run would remove it)")
        else:
            console.print(f"{indent}kept none of {escape(', '.join(candidate.get('affinityOptions') or []))} for the "
                          "pod's affinity: DefaultPreemption's victims were better")


def _render_placement(console: Console, d: PodDiagnosis) -> None:
    """Where and when the scheduler placed a bound pod (kube-scheduler's Scheduled event), and the
    preemptions that made room for it."""
    scheduled = d.history.get("scheduled")
    if scheduled is not None and scheduled["node"] == d.node:
        failed = d.history["failedAttempts"]
        after = f"after {_plural(failed, 'failed attempt')}" if failed else "its first"
        console.print(f"  Successfully assigned {d.pod} to {d.node} at t={scheduled['time']:g}s "
                      f"(attempt {scheduled['attempt']}, {after})")
    elif d.history:
        console.print("  not placed by the scheduler in this run: its spec.nodeName was set when it was created "
                      "(a snapshot's bound pod, or a manifest's nodeName)")
    _render_history_preemptions(console, d)


def _render_history_preemptions(console: Console, d: PodDiagnosis) -> None:
    for p in d.history.get("preemptions", ()):
        console.print(f"  preempted {escape(_victims(p['victims'], p['node']))} {_where(p['victims'], p['node'])} "
                      f"{p['node']} at t={p['time']:g}s")
        _render_notes(console, p)


def _group_hints(hints: dict[str, int], count: int) -> str:
    if len(hints) == 1 and next(iter(hints.values())) == count:
        return next(iter(hints))
    shown = [f"{hint} ({_plural(n, 'node')})" for hint, n in list(hints.items())[:GROUP_HINTS]]
    if len(hints) > GROUP_HINTS:
        shown.append(f"{len(hints) - GROUP_HINTS:,} other hints")
    return "; ".join(shown)


def _grouped_table(verdicts: list[NodeVerdict]) -> Table:
    """The rejecting nodes grouped by verdict, as kube-scheduler counts them: one row per distinct
    set of failures, with its node count and a few names (all names for a small group)."""
    table = Table(title=f"Filters that reject the pod, nodes grouped by verdict ({len(verdicts):,} nodes; "
                        "--nodes all lists each)", title_justify="left")
    for col in ("nodes", "plugin", "reason", "what would have to change"):
        table.add_column(col, overflow="fold")
    for group in node_groups(verdicts):
        if not group.failures:
            continue  # the nodes that fit: named above
        count = len(group.nodes)
        names = ", ".join(group.nodes[:GROUP_EXAMPLES])
        nodes = names if count <= GROUP_EXAMPLES else f"{count:,} nodes, e.g. {names}"
        last = len(group.failures) - 1
        for i, failure in enumerate(group.failures):
            table.add_row(nodes if i == 0 else "", failure["plugin"], failure["reason"],
                          _group_hints(failure["hints"], count), end_section=i == last)
    return table


def _per_node_table(verdicts: list[NodeVerdict]) -> Table:
    table = Table(title="Every filter that rejects the pod, per node", title_justify="left")
    for col in ("node", "plugin", "reason", "what would have to change"):
        table.add_column(col, overflow="fold")
    for v in sorted((v for v in verdicts if not v.fits), key=lambda v: natural_key(v.node)):
        for i, failure in enumerate(v.failures):
            table.add_row(v.node if i == 0 else "", failure["plugin"], failure["reason"],
                          "; ".join(failure.get("hints") or []))
    return table


def _render_preemption(console: Console, d: PodDiagnosis) -> None:
    p = d.preemption
    if p is None:
        return
    if p["outcome"] == "would preempt":
        chosen = next(c for c in p["candidates"] if c["node"] == p["chosen"])
        console.print(f"  preemption would help: on {p['chosen']} (picked by {p['criterion']}), "
                      f"evicting {escape(_victims(chosen['victims'], p['chosen']))}; "
                      f"PDB violations: {chosen['pdbViolations']}")
        _render_notes(console, chosen)
        if len(p["candidates"]) > 1:
            console.print("  other candidates: " + "; ".join(
                f"{c['node']}: {len(c['victims'])} victim(s)" for c in p["candidates"] if c["node"] != p["chosen"]))
    elif d.preemption_if_allowed is not None and d.preemption_if_allowed["outcome"] == "would preempt":
        q = d.preemption_if_allowed
        chosen = next(c for c in q["candidates"] if c["node"] == q["chosen"])
        console.print(f"  preemption would help, but the pod's preemptionPolicy is Never: it would take "
                      f"{q['chosen']}, evicting {escape(_victims(chosen['victims'], q['chosen']))}; "
                      f"PDB violations: {chosen['pdbViolations']}")
        _render_notes(console, chosen)
    elif p["outcome"] == "not eligible" and d.terminating_on_nominated:
        _render_waiting(console, d)
    else:
        console.print(f"  preemption would not help: {p['outcome']}"
                      + (f" — {escape(p['message'])}" if p["message"] else ""))


def _render_waiting(console: Console, d: PodDiagnosis) -> None:
    """Upstream's PodEligibleToPreemptOthers refuses a new preemption while lower-priority pods
    preempted by the scheduler terminate on the pod's nominated node: when the pod preempted them
    itself, its preemption is under way, not in vain."""
    assert d.preemption is not None
    terminating = d.terminating_on_nominated
    own = [t for t in terminating if t["preemptor"] == d.pod]
    why = f"meanwhile kube-scheduler does not preempt again: {escape(d.preemption['message'])}"
    if own:
        last = next((p for p in reversed(d.history.get("preemptions", ())) if p["node"] == d.nominated_node), None)
        when = f" at t={last['time']:g}s" if last else ""
        waits = "the victim" if len(own) == 1 else f"its {len(own)} victims"
        console.print(f"  preemption under way: it preempted {escape(_victims(own, d.nominated_node))} "
                      f"{_where(own, d.nominated_node)} {d.nominated_node}{when} and is nominated there; it waits for "
                      f"{waits} to terminate ({why})")
        if last is not None:
            _render_notes(console, last)
        return
    by = sorted({t["preemptor"] for t in terminating if t["preemptor"]})
    where = "on its nominated node" if all(t.get("node", d.nominated_node) == d.nominated_node for t in terminating) \
        else "in the topology domain of its nominated node"
    console.print(f"  preemption not tried now: {escape(_victims(terminating, d.nominated_node))} still terminating "
                  f"{where} {d.nominated_node}" + (f", preempted for {', '.join(by)}" if by else "") + f" ({why})")


def render_diagnosis(console: Console, d: PodDiagnosis, nodes: str = "auto") -> None:
    """``nodes``: auto (one row per node up to :data:`NODE_ROWS_UP_TO` nodes, else grouped),
    grouped or all (one row per node)."""
    console.print(f"[bold]{escape(d.pod)}[/] (priority {d.priority}) {_moment(d.at)}: {escape(_state(d))}")
    if d.failed:
        console.print(f"  failed: {escape(d.failed['reason'])} — {escape(d.failed['message'])}")
    indent = "  "
    if d.as_if_pending:
        _render_placement(console, d)
        console.print(f"  as a pod pending now (without its nodeName, itself not counted on {d.node}):")
        indent = "    "
    elif d.history.get("preemptions") and not d.terminating_on_nominated:
        _render_history_preemptions(console, d)
    if d.pre_filter:
        console.print(f"{indent}rejected before filtering: {escape(d.pre_filter)}")
        for hint in d.pre_filter_hints:
            console.print(f"{indent}  hint: {escape(hint)}")
    fitting = sorted((v.node for v in d.verdicts if v.fits), key=natural_key)
    if d.verdicts:
        console.print(f"{indent}fits {len(fitting):,} of {_plural(len(d.verdicts), 'node')}"
                      + (f": {', '.join(fitting[:10])}" + (" ..." if len(fitting) > 10 else "") if fitting else ""))
    if len(fitting) < len(d.verdicts):
        per_node = nodes == "all" or (nodes == "auto" and len(d.verdicts) <= NODE_ROWS_UP_TO)
        console.print(_per_node_table(d.verdicts) if per_node else _grouped_table(d.verdicts))
    if d.upstream_message:
        console.print(f"{indent}kube-scheduler would report: {escape(d.upstream_message)}")
    _render_preemption(console, d)


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
        if pod["node"]:
            why = f"bound to {pod['node']}, not started yet"
        else:
            d = diagnose(scheduler, ns, name, detail=False)
            why = d.upstream_message or d.pre_filter or "waiting to be tried"
        table.add_row(key, str(pod["priority"]), why)
        rows += 1
    if rows:
        console.print(table)
    else:
        console.print("no pending pod" + (f" in namespace {namespace} (-A: in every namespace)" if namespace else ""))


def _is_input(argument: str) -> bool:
    return argument == "-" or os.path.exists(argument)


@click.command()
@click.argument("pod", metavar="POD", required=False)  # (metavars without the brackets of optional
@click.argument("snapshot", metavar="SNAPSHOT", type=INPUT_PATH, required=False)  # arguments: see the help)
@click.option("--namespace", "-n", default=None, help="The pod's namespace (default: default), as kubectl's -n.")
@click.option("--all-namespaces", "-A", is_flag=True,
              help="With --all-pending: every namespace, as kubectl's -A.")
@click.option("--all-pending", is_flag=True,
              help="Instead of one POD: every pending pod with the message kube-scheduler would write "
                   "(SNAPSHOT is then the only argument).")
@cluster_source_options
@duration_option("--at", help="Diagnose the cluster as it is at this simulated time, after what happened at that "
                              "instant (default: the end of the run). The header says which moment it is.")
@seed_option()
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--nodes", "nodes_listing", type=click.Choice(["auto", "grouped", "all"]), default="auto",
              show_default=True,
              help=f"How the table output lists the nodes that reject the pod. grouped: one row per distinct set of "
                   f"failures, with its node count and {GROUP_EXAMPLES} names (all names for a group that small), "
                   f"as kube-scheduler counts them; all: one row per node; auto: all up to {NODE_ROWS_UP_TO} nodes, "
                   "grouped above. -o json always has every node (nodes) and the groups (nodeGroups).")
@scheduler_config_option("KubeSchedulerConfiguration to simulate with, instead of the scenario's own.")
@strict_option()
def explain(pod: str | None, snapshot: str | None, namespace: str | None, all_namespaces: bool, all_pending: bool,
            at: float | None, seed: int | None, output: str, nodes_listing: str,
            kubeconfig: str | None, context: str | None, scheduler_config: str | None, strict: bool) -> None:
    """Explain why POD (namespace/name, or name with -n) is pending in SNAPSHOT (a scenario, a `kubectl get
    ... -A -o yaml` dump or a `kubesched snapshot` file; - for standard input) or in a live cluster read
    through --kubeconfig: every filter that rejects it on every node with what is in the way, the
    message kube-scheduler would write, and whether preemption would help and whom it would cost.

    \b
    kubesched explain [OPTIONS] POD SNAPSHOT
    kubesched explain [OPTIONS] POD --kubeconfig FILE
    kubesched explain [OPTIONS] --all-pending (SNAPSHOT | --kubeconfig FILE)

    The cluster is simulated to the end of the run (or to --at) and the pod explained as it is then.
    A pod bound by then is reported where and when the scheduler placed it (by which attempt, after
    how many failed ones, and the pods it preempted), then diagnosed as a pod pending now: without
    its nodeName and without itself counted on its node.

    With --all-pending, every pending pod (of -n NAMESPACE, or -A) with its message."""
    if all_pending:
        if snapshot is not None:
            raise click.UsageError("with --all-pending give only SNAPSHOT (or --kubeconfig), not a POD")
        snapshot, pod = pod, None
    elif pod is None:
        raise click.UsageError("give a POD to explain, or --all-pending")
    elif snapshot is None and kubeconfig is None and _is_input(pod):
        raise click.UsageError(f"missing POD: {pod} is the SNAPSHOT; give the pod to explain before it "
                               "(explain POD SNAPSHOT), or --all-pending to list every pending pod")
    if all_namespaces and (not all_pending or namespace is not None):
        raise click.UsageError("-A goes with --all-pending and without -n")
    one_standard_input(snapshot, scheduler_config)
    if pod is not None and "/" in pod:
        if namespace is not None and namespace != pod.split("/", 1)[0]:
            raise click.UsageError(f"POD {pod!r} names namespace {pod.split('/', 1)[0]!r}, -n says {namespace!r}")
        namespace, name = _split(pod)
    else:
        name = pod or ""
        namespace = namespace or (None if all_namespaces else DEFAULT_NAMESPACE)
    try:
        source = with_scheduler_config(load_source(snapshot, kubeconfig, context), scheduler_config)
        report_unknown_fields(source.warnings, strict)
        outcome = simulate(source, seed=seed, until=at, explain=True, owned=True)
        if all_pending:
            _render_pending(make_console(), outcome.scheduler, outcome.result, namespace)
            return
        assert namespace is not None
        if outcome.scheduler.cluster.get("Pod", namespace, name) is None:
            raise KeyError(missing_pod_text(outcome.result, namespace, name, at))
        diagnosis = diagnose(outcome.scheduler_of(namespace, name), namespace, name, run=outcome.result,
                             end_of_run=at is None)
    except KeyError as err:
        click.echo(f"error: {err.args[0]}", err=True)
        sys.exit(2)
    except KubeschedError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    if output == "json":
        write_json(diagnosis.to_dict())
        return
    render_diagnosis(make_console(), diagnosis, nodes_listing)
