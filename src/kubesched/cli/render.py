"""Human-readable rendering of simulation results (rich tables)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.console import Console
from rich.markup import escape

from kubesched.analysis.grouping import ClusterFacts, Workload, pool_by_name
from kubesched.api.quantity import parse_quantity
from kubesched.cli.render_racing import render_racing
from kubesched.cli.tables import Table

#: lifecycle events left out of the timeline (one of each per pod; the pods table has the outcome)
TIMELINE_OMITTED = ("Created", "Started")
TIMELINE_LIMIT = 60
SUMMARY_ABOVE = 200
MEMORY_UNITS = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def _cores(amount: str) -> str:
    """A cpu amount in cores (one unit per column): ``1500m`` → ``1.5``."""
    value = float(parse_quantity(amount))
    return f"{value:g}" if value >= 0.01 or value == 0 else f"{value:.3f}"


def _pct(requested: str, allocatable: str) -> str:
    alloc = parse_quantity(allocatable)
    if alloc == 0:
        return "-"
    return f"{float(parse_quantity(requested) / alloc) * 100:.0f}%"


def memory_unit(amounts: list[str]) -> tuple[str, int]:
    """The binary unit in which the largest of ``amounts`` reads best (one unit per column)."""
    largest = max((parse_quantity(a) for a in amounts), default=0)
    return next(((unit, size) for unit, size in MEMORY_UNITS if largest >= size), ("", 1))


def in_unit(amount: str, size: int) -> str:
    value = float(parse_quantity(amount)) / size
    return f"{value:.0f}" if value.is_integer() or value >= 100 else f"{value:.1f}"


def render_result(console: Console, result: dict[str, Any], facts: ClusterFacts,
                  events_limit: int | None = TIMELINE_LIMIT, list_every_pod: bool = False,
                  as_read_by: tuple[str, ...] = ()) -> None:
    """``facts``: what the result does not say (workloads, pools, extended resources). ``events_limit``:
    timeline rows shown (None: all). Runs with more than ``SUMMARY_ABOVE`` pods (nodes) get a summary
    by workload (pool) unless ``list_every_pod``. ``as_read_by``: for a snapshot, tables of its pods by
    state per ``namespace`` and/or per ``class``."""
    summary = result["summary"]
    console.print(
        f"[bold]{result['scenario']}[/]  seed {result['seed']}  ended at t={result['endTime']:g}s  "
        f"scheduled {summary['scheduled']}, pending {summary['pending']}, "
        f"preemptions {summary['preemptions']}, victims {summary['victims']}"
    )
    cluster = result.get("cluster") or {}
    extras = []
    if "autoscaler" in cluster:
        extras.append(f"node-hours {cluster['autoscaler'].get('nodeHours', 0):g}")
    if "eviction" in cluster:
        extras.append(f"kubelet evictions {len(cluster['eviction'].get('evictions', []))}")
    if "topology" in cluster:
        rejected = cluster["topology"].get("rejected") or {}
        extras.append(f"kubelet topology rejections {sum(rejected.values())}")
    if extras:
        console.print("  " + ", ".join(extras))
    snapshot = result.get("snapshot")
    if snapshot:
        restored = ", ".join(f"{n} {kind}" for kind, n in snapshot["restored"].items())
        console.print(f"  snapshot taken at {snapshot['takenAt']} (t=0): restored {restored}")
        as_read = snapshot.get("asRead")
        if as_read:
            console.print("  " + as_read_line(as_read))
        for note in snapshot["notes"]:
            console.print(f"  note: {note}")
        for by in as_read_by:
            if as_read:
                _as_read_table(console, as_read, by)
    if list_every_pod or len(result["pods"]) <= SUMMARY_ABOVE:
        _pods_table(console, result)
    else:
        _pods_summary(console, result, facts)

    if list_every_pod or len(result["nodes"]) <= SUMMARY_ABOVE:
        _nodes_table(console, result, facts)
    else:
        _nodes_summary(console, result, facts)
    if "racing" in result:
        render_racing(console, result["racing"])
    _timeline(console, result, events_limit, merge=not list_every_pod and len(result["pods"]) > SUMMARY_ABOVE)
    _rejected(console, result)


def as_read_line(as_read: dict[str, Any]) -> str:
    """The cluster a snapshot shows, in one line: nodes, then pods by state (states with none left out)."""
    node_notes = [f"{as_read[key]:,} {word}" for key, word in (("cordonedNodes", "cordoned"),
                                                               ("notReadyNodes", "not Ready")) if as_read[key]]
    nodes = f"{as_read['nodes']:,} nodes" + (f" ({', '.join(node_notes)})" if node_notes else "")
    pods = as_read["pods"]
    states = ", ".join(f"{n:,} {state}" for state, n in pods.items() if n)
    return f"cluster as read: {nodes}; {sum(pods.values()):,} pods" + (f": {states}" if states else "")


def _as_read_table(console: Console, as_read: dict[str, Any], by: str) -> None:
    rows = as_read["podsByNamespace" if by == "namespace" else "podsByPriorityClass"]
    states = [state for state in as_read["pods"] if as_read["pods"][state]] or ["running", "pending"]
    table = Table(title=f"Pods as read, by {'namespace' if by == 'namespace' else 'PriorityClass'}",
                  title_justify="left")
    table.add_column(by)
    for state in states:
        table.add_column(state, justify="right")
    table.add_column("total", justify="right")
    for key, counts in rows.items():
        table.add_row(key or "(none)", *(f"{counts[state]:,}" for state in states), f"{sum(counts.values()):,}")
    console.print(table)


def _pods_table(console: Console, result: dict[str, Any]) -> None:
    pods = Table(title="Pods", title_justify="left")
    for col in ("pod", "priority", "phase", "node", "nominated node"):
        pods.add_column(col)
    pods.add_fitted_rows(console, [[key, str(pod["priority"]), pod["phase"], pod["node"] or "-",
                                    pod["nominatedNodeName"] or "-"] for key, pod in result["pods"].items()],
                         names=(0, 3, 4))
    console.print(pods)


#: above this many workloads (pools), the summary counts pods per namespace (nodes per shape)
SUMMARY_GROUPS = 40
PHASES = ("Running", "Pending", "Succeeded", "Failed", "Terminating", "Deleted")


def _pods_summary(console: Console, result: dict[str, Any], facts: ClusterFacts) -> None:
    """Pods counted by phase per workload (their controller's: a Deployment's, a StatefulSet's, ...),
    or per namespace when there are more workloads than a table reads well (a production cluster
    has thousands)."""
    groups: dict[Workload, Counter[str]] = {}
    for key, pod in result["pods"].items():
        groups.setdefault(facts.workloads[key], Counter())[pod["phase"]] += 1
    count = f"{len(result['pods']):,} pods"
    if len(groups) > SUMMARY_GROUPS:
        by_namespace: dict[str, Counter[str]] = {}
        for workload, counts in groups.items():
            by_namespace.setdefault(workload.name.partition("/")[0], Counter()).update(counts)
        rows: dict[tuple[str, ...], Counter[str]] = {(ns,): counts for ns, counts in by_namespace.items()}
        heads = ["namespace"]
        title = f"Pods by namespace ({count} in {len(groups):,} workloads; --pods all lists each)"
    else:
        rows = {(w.name, w.kind or "-"): counts for w, counts in groups.items()}
        heads = ["workload", "kind"]
        title = f"Pods by workload ({count}; --pods all lists each)"
    seen = {phase for counts in rows.values() for phase in counts}
    phases = [p for p in PHASES if p in seen]
    table = Table(title=title, title_justify="left")
    for head in heads:
        table.add_column(head)
    for phase in phases:
        table.add_column(phase, justify="right")
    table.add_fitted_rows(console, [[*group, *[f"{counts[p]:,}" if counts[p] else "-" for p in phases]]
                                    for group, counts in sorted(rows.items())])
    console.print(table)


def _node_pools(result: dict[str, Any], facts: ClusterFacts) -> tuple[str, str, dict[str, list[dict[str, Any]]]]:
    """(the groups' column, the label that names them all or "", the groups): by their pool label
    (the label's value; ``label=value`` where the nodes' pools are named by different labels); nodes
    without one by name;
    by shape (allocatable cpu and memory, what a node group of one instance type shares) when that
    makes more groups than a table reads well (cloud node names such as ip-10-0-1-23.ec2.internal
    make one per node)."""
    labelled = {facts.pools[row["node"]][0] for row in result["nodes"] if row["node"] in facts.pools}
    one_label = len(labelled) == 1 and all(row["node"] in facts.pools for row in result["nodes"])
    pools: dict[str, list[dict[str, Any]]] = {}
    for row in result["nodes"]:
        label = facts.pools.get(row["node"])
        if label is None:
            pool = pool_by_name(row["node"]) + (" (by name)" if labelled else "")
        else:
            pool = label[1] if one_label else f"{label[0]}={label[1]}"
        pools.setdefault(pool, []).append(row)
    if len(pools) <= SUMMARY_GROUPS:
        return "pool" if labelled else "pool (by node name)", next(iter(labelled)) if one_label else "", pools
    unit, size = memory_unit([row["memory"]["allocatable"] for row in result["nodes"]])
    pools = {}
    for row in result["nodes"]:
        shape = f"{_cores(row['cpu']['allocatable'])} cpu / {in_unit(row['memory']['allocatable'], size)}{unit}"
        pools.setdefault(shape, []).append(row)
    return "shape (allocatable)", "", pools


def _nodes_summary(console: Console, result: dict[str, Any], facts: ClusterFacts) -> None:
    """Nodes per pool (see :func:`_node_pools`): how many, their pods, how full, and the extended
    resources (GPUs, ...) requested of those they have."""
    what, label, pools = _node_pools(result, facts)
    extended = facts.extended_names()
    by = f"{what.split()[0]} ({label}; " if label else f"{what.split()[0]} ("
    table = Table(title=f"Nodes by {by}{len(result['nodes']):,} nodes; --pods all lists each)", title_justify="left")
    table.add_column(what)
    for col in ("nodes", "pods", "cpu % mean", "cpu % max", "memory % mean", "memory % max"):
        table.add_column(col, justify="right")
    for name in extended:
        table.add_column(name, justify="right")
    lines = []
    for pool, rows in sorted(pools.items()):
        cpu = [_share(r["cpu"]) for r in rows]
        mem = [_share(r["memory"]) for r in rows]
        lines.append([pool, f"{len(rows):,}", f"{sum(r['pods'] for r in rows):,}",
                      f"{sum(cpu) / len(cpu):.0f}%", f"{max(cpu):.0f}%", f"{sum(mem) / len(mem):.0f}%",
                      f"{max(mem):.0f}%", *(_extended_sum(facts, rows, r) for r in extended)])
    table.add_fitted_rows(console, lines)
    console.print(table)


def _extended_sum(facts: ClusterFacts, rows: list[dict[str, Any]], resource: str) -> str:
    """``requested / allocatable`` of ``resource`` summed over the nodes of ``rows`` ("-": none has it)."""
    held = [amounts for r in rows if (amounts := facts.extended.get(r["node"], {}).get(resource)) is not None]
    if not held:
        return "-"
    return f"{sum(a[0] for a in held):,} / {sum(a[1] for a in held):,}"


def _share(amounts: dict[str, str]) -> float:
    alloc = parse_quantity(amounts["allocatable"])
    return float(parse_quantity(amounts["requested"]) / alloc * 100) if alloc else 0.0


def _nodes_table(console: Console, result: dict[str, Any], facts: ClusterFacts) -> None:
    """Requested / allocatable per node: cpu, memory, pods, and a column per extended resource any
    node has (``nvidia.com/gpu``)."""
    nodes = Table(title="Nodes (requested / allocatable at the end)", title_justify="left")
    unit, size = memory_unit([row["memory"]["allocatable"] for row in result["nodes"]])
    extended = facts.extended_names()
    for col in ("node", "cpu", "cpu %", f"memory ({unit or 'bytes'})", "memory %", "pods"):
        nodes.add_column(col)
    for name in extended:
        nodes.add_column(name)
    rows = []
    for row in result["nodes"]:
        cpu, mem = row["cpu"], row["memory"]
        held = facts.extended.get(row["node"], {})
        rows.append([
            row["node"],
            f"{_cores(cpu['requested'])} / {_cores(cpu['allocatable'])}", _pct(cpu["requested"], cpu["allocatable"]),
            f"{in_unit(mem['requested'], size)} / {in_unit(mem['allocatable'], size)}",
            _pct(mem["requested"], mem["allocatable"]),
            f"{row['pods']} / {row['allocatablePods']}",
            *(f"{held[r][0]} / {held[r][1]}" if r in held else "-" for r in extended),
        ])
    nodes.add_fitted_rows(console, rows)
    console.print(nodes)


def _event_row(event: dict[str, Any]) -> tuple[str, str, str]:
    """(time, reason, details) of a timeline row."""
    details = event.get("message") or ""
    if event.get("node") and event["reason"] != "FailedScheduling":
        details = f"node {event['node']}" + (f"; {details}" if details else "")
    if event["reason"] == "Nominated" and not event.get("node"):
        details = "nomination cleared"
    if event.get("preemptor"):
        details += f" (preemptor {event['preemptor']})"
    if event.get("scheduler"):  # racing schedulers: the one that recorded it
        details = f"{event['scheduler']}: {details}"
    return f"{event['time']:g}", event["reason"], details


def _timeline(console: Console, result: dict[str, Any], events_limit: int | None, merge: bool = False) -> None:
    """``events_limit``: rows shown (None: all). ``merge``: events in a row at the same moment with
    the same reason and details (200 pods of one workload failing alike) are one row, naming the
    first pod and how many more, as ``kubectl get events`` counts a repeated event."""
    events = [e for e in result["events"] if e["reason"] not in TIMELINE_OMITTED]
    rows: list[tuple[tuple[str, str, str], list[str]]] = []  # (time, reason, details), pods
    for event in events:
        row = _event_row(event)
        if merge and rows and rows[-1][0] == row:
            rows[-1][1].append(event["pod"])
        else:
            rows.append((row, [event["pod"]]))
    shown = rows if events_limit is None else rows[:events_limit]
    timeline = Table(title="Timeline", title_justify="left")
    for col in ("t (s)", "event", "pod", "details"):
        timeline.add_column(col)
    for (time, reason, details), pods in shown:
        timeline.add_row(time, reason, pods[0] if len(pods) == 1 else f"{pods[0]} and {len(pods) - 1} more pods",
                         details)
    console.print(timeline)
    if len(shown) < len(rows):
        counts: Counter[str] = Counter()
        for (_, reason, _), pods in rows[len(shown):]:
            counts[reason] += len(pods)
        rest = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
        console.print(f"... {sum(counts.values())} more events ({rest}); --events 0 shows them all")


def _rejected(console: Console, result: dict[str, Any]) -> None:
    if result["rejected"]:
        rejected = Table(title="Rejected by admission", title_justify="left")
        for col in ("t (s)", "kind", "name", "code", "message"):
            rejected.add_column(col)
        for r in result["rejected"]:
            rejected.add_row(f"{r['time']:g}", r["kind"], r["name"], str(r["code"]), r["message"])
        console.print(rejected)


def find_pod(result: dict[str, Any], wanted: str) -> str | None:
    """The key of the pod ``wanted`` names (``namespace/name``, or a name in any namespace)."""
    for key in result["pods"]:
        if key == wanted or ("/" not in wanted and key.split("/", 1)[-1] == wanted):
            return str(key)
    return None


def render_explain(console: Console, result: dict[str, Any], wanted: str) -> None:
    key = find_pod(result, wanted)
    if key is None:
        console.print(f"[red]no pod {wanted!r} in this simulation[/]")
        return
    pod = result["pods"][key]
    console.print(f"\n[bold]Explain {key}[/]: {pod['phase']} on {pod['node'] or '-'} "
                  f"(priority {pod['priority']}, nominated {pod['nominatedNodeName'] or '-'})")
    for attempt in result.get("attempts", []):
        if attempt["pod"] != key:
            continue
        if attempt["outcome"] == "scheduled":
            console.print(f"  t={attempt['time']:g}s scheduled on [green]{attempt['node']}[/]")
            if attempt["scores"]:
                table = Table(show_header=True, box=None, padding=(0, 2))
                plugins = list(attempt["scores"][0]["plugins"])
                for col in ["node", "total", *plugins]:
                    table.add_column(col)
                for s in attempt["scores"][:5]:
                    table.add_row(s["node"], str(s["total"]), *(str(s["plugins"][p]) for p in plugins))
                console.print(table)
        else:
            console.print(f"  t={attempt['time']:g}s [yellow]unschedulable[/]: {escape(attempt['message'])}")
            for node, msg in list(attempt["nodeStatuses"].items())[:20]:
                console.print(f"      {node}: {escape(msg)}")
    for decision in result.get("preemptionDecisions", []):
        victim_of = any(v["pod"] == key for c in decision["candidates"] for v in c["victims"]
                        if c["node"] == decision["chosen"])
        if decision["pod"] != key and not victim_of:
            continue
        head = f"  t={decision['time']:g}s preemption for {decision['pod']}: {decision['outcome']}"
        if decision["chosen"]:
            head += f", node {decision['chosen']} chosen by {decision['criterion']}"
        console.print(head)
        if decision["message"]:
            console.print(f"      {escape(decision['message'])}")
        for c in decision["candidates"]:
            victims = ", ".join(f"{v['pod']}({v['priority']}"
                                + (f", on {v['node']})" if v.get("node", c["node"]) != c["node"] else ")")
                                for v in c["victims"])
            mark = "*" if c["node"] == decision["chosen"] else " "
            console.print(f"    {mark} {c['node']}: victims {victims}; PDB violations {c['pdbViolations']}")
