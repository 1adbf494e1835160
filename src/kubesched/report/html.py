"""Self-contained HTML reports (inline CSS and SVG; no scripts, no network)."""

from __future__ import annotations

from html import escape
from typing import Any

from kubesched.report.cluster_plots import cluster_charts
from kubesched.report.svg import bar_chart, step_chart
from kubesched.sim.identity import named
from kubesched.sim.series import pod_counts_over_time

STYLE = """
body{font-family:sans-serif;margin:2em auto;max-width:980px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}
th{background:#f3f3f3;text-align:left}h1{font-size:22px}h2{font-size:17px;margin-top:1.6em}
.muted{color:#777}
"""


def table(headers: list[str], rows: list[list[Any]]) -> str:
    if not rows:
        return '<p class="muted">none</p>'
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def page(title: str, sections: list[str]) -> str:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>" + "\n".join(sections) + "</body></html>\n")


def _baseline_preemption(diff: dict[str, Any]) -> str:
    preemption = diff["baselinePreemption"]
    return (f"<p>Baseline: preemption {'on' if preemption['enabled'] else 'off'} &mdash; "
            f"{escape(preemption['reason'])}.</p>")


def _blocked_for(entry: dict[str, Any]) -> str:
    """Seconds a drained pod's eviction was refused (at least that long when still refused at the end)."""
    if "blockedFor" not in entry:
        return ""
    return f"{entry['blockedFor']:g}" + (", still blocked at the end of the run" if entry.get("blockedAtEnd") else "")


def whatif_report(diff: dict[str, Any]) -> str:
    base, new = diff["baseline"], diff["changed"]
    s = diff["summary"]
    sections = [
        "<p>Changes: " + escape("; ".join(diff["changes"]) or "none") + f" &middot; seed {diff['seed']}</p>",
        _baseline_preemption(diff),
        table(["", "baseline", "changed"], [
            [k, base["summary"][k], new["summary"][k]] for k in ("scheduled", "pending", "preemptions", "victims")
        ]),
        f"<p>{s['newlyPreempted']} pod(s) newly preempted ({s['pdbViolations']} violating a PDB), "
        f"{s['started']} pending pod(s) would start, {s['savedFromPreemption']} would keep running, "
        f"{s['stopped']} running pod(s) would stop, {s['notStarted']} the baseline starts would not start.</p>",
    ]
    if diff.get("rejected"):
        sections.append("<h2>Refused by admission</h2>" + table(
            ["t (s)", "kind", "namespace", "name", "code", "why"],
            [[f"{r['time']:g}", r["kind"], r["namespace"] or "", r["name"], r["code"], r["reason"]]
             for r in diff["rejected"]]))
    impact = diff["impact"]
    groups = [f"{r['priorityClass']} ({r['namespace']})" for r in impact]
    sections.append(bar_chart("Running pods per PriorityClass (namespace)", groups, {
        "baseline": [r["runningBefore"] for r in impact], "changed": [r["runningAfter"] for r in impact]},
        y_label="pods", integer=True))
    base_series, new_series = pod_counts_over_time(base["events"]), pod_counts_over_time(new["events"])
    sections.append(step_chart("Pending pods over time", {
        "baseline": base_series["pending"], "changed": new_series["pending"]}, x_label="simulated seconds",
        y_label="pods", x_end=max(base["endTime"], new["endTime"]), integer=True, emphasise_first=True))
    sections.append("<h2>Pods that would be preempted</h2>" + table(
        ["t (s)", "victim", "priority", "preemptor", "node", "deciding criterion", "violates PDB"],
        [[f"{p['time']:g}", named(p, "victim", "baselineVictim"), p["victimPriority"],
          named(p, "preemptor", "baselinePreemptor"), p["node"], p["criterion"],
          "yes" if p["violatesPDB"] else ""] for p in diff["preempted"]]))
    sections.append("<h2>Pending pods that would start</h2>" + table(
        ["pod", "node"], [[named(p), p["node"]] for p in diff["started"]]))
    sections.append("<h2>Pods that would keep running</h2>" + table(
        ["pod", "node", "in the baseline"], [[named(p), p["node"], p["phaseInBaseline"]] for p in diff["keptRunning"]]))
    sections.append("<h2>Running pods that would stop</h2>" + table(
        ["pod", "node", "phase after", "replaced by"],
        [[named(p), p["node"], p["phaseAfter"],
          f"{p['replacedBy']['pod']} on {p['replacedBy']['node'] or '-'}" if p.get("replacedBy") else ""]
         for p in diff["stopped"]]))
    if diff["notStarted"]:
        sections.append("<h2>Pods the baseline starts that would not start</h2>" + table(
            ["pod", "node in the baseline", "phase after"],
            [[named(p), p["node"], p["phaseAfter"]] for p in diff["notStarted"]]))
    for drain in diff.get("drains", []):
        sections.append(f"<h2>Drain of {escape(drain['node'])}: {escape(drain['outcome'])}</h2>" + table(
            ["pod", "evicted at (s)", "blocked by PDB", "blocked for (s)", "replaced by"],
            [[p["pod"], "-" if p["evicted"] is None else f"{p['evicted']:g}", p.get("blockedBy") or "",
              _blocked_for(p),
              (f"{p['replacedBy']['pod']} on {p['replacedBy']['node'] or '-'}" if p.get("replacedBy")
               else "lost" if p.get("lost") else "")] for p in drain["pods"]]
            + [[p["pod"], f"skipped ({p['why']})", "", "", ""] for p in drain["skipped"]]))
    sections.append("<h2>Impact per PriorityClass and namespace</h2>" + table(
        ["namespace", "PriorityClass", "running before", "running after", "pending before", "pending after",
         "preempted before", "preempted after"],
        [[r["namespace"], r["priorityClass"], r["runningBefore"], r["runningAfter"], r["pendingBefore"],
          r["pendingAfter"], r["preemptedBefore"], r["preemptedAfter"]] for r in impact]))
    return page(f"What if: {diff['scenario']}", sections)


#: above this many nodes the per-node chart becomes a histogram of nodes by requested share
NODES_PER_BAR_LIMIT = 40
SHARE_BUCKETS = [f"{lo}-{lo + 10}%" for lo in range(0, 100, 10)] + ["over 100%"]


def _requested_share(row: dict[str, Any], resource: str) -> float:
    from kubesched.api.quantity import parse_quantity

    alloc = parse_quantity(row[resource]["allocatable"])
    return float(parse_quantity(row[resource]["requested"]) / alloc * 100) if alloc else 0.0


def node_chart(nodes: list[dict[str, Any]]) -> str:
    """Requested share of cpu and memory per node, or for many nodes how many nodes are how full."""
    shares = {"cpu %": [_requested_share(n, "cpu") for n in nodes],
              "memory %": [_requested_share(n, "memory") for n in nodes]}
    if len(nodes) <= NODES_PER_BAR_LIMIT:
        return bar_chart("Requested / allocatable per node at the end", [n["node"] for n in nodes], shares,
                         y_label="%")
    counts = {name.replace(" %", ""): [0.0] * len(SHARE_BUCKETS) for name in shares}
    for name, values in shares.items():
        for value in values:
            counts[name.replace(" %", "")][min(int(value // 10), 10) if value <= 100 else 10] += 1
    return bar_chart(f"Nodes by requested share of allocatable at the end ({len(nodes)} nodes)", SHARE_BUCKETS,
                     counts, y_label="nodes", integer=True)


def _topology_section(cluster: dict[str, Any]) -> list[str]:
    topology = cluster.get("topology")
    if not topology:
        return []
    reasons = sorted({r for n in topology.get("nodes") or [] for r in (n.get("rejected") or {})})
    rows = [[n["node"], n.get("policy", ""), n.get("admitted", 0),
             *[(n.get("rejected") or {}).get(r, 0) for r in reasons]] for n in topology.get("nodes") or []]
    chart = bar_chart("Kubelet topology admissions per node", [r[0] for r in rows], {
        "admitted": [float(r[2]) for r in rows],
        **{f"rejected: {reason}": [float(r[3 + i]) for r in rows] for i, reason in enumerate(reasons)}},
        y_label="pods", integer=True) if rows else ""
    return ["<h2>NUMA topology: kubelet admissions</h2>", chart,
            table(["node", "policy", "admitted", *[f"rejected ({r})" for r in reasons]], rows)]


def _racing_section(racing: dict[str, Any] | None) -> list[str]:
    """Racing schedulers (docs/racing-schedulers.md): a row per scheduler, the preemptions across
    them and their ping-pong rounds."""
    if not racing:
        return []
    rows = [[r["name"], ", ".join(r["schedulerNames"]), f"{r['informerDelay']:g}s", f"{r['bindDelay']:g}s",
             r["scheduled"], r["preemptions"], r["victims"], r["rejectedByKubelet"]] for r in racing["schedulers"]]
    return ["<h2>Schedulers</h2>" + table(
                ["scheduler", "schedulerNames", "informer delay", "bind delay", "scheduled", "preemptions",
                 "victims", "refused by kubelet"], rows),
            "<h2>Preemptions across schedulers</h2>" + table(
                ["preemptor", "victims placed by", "victims"],
                [[c["preemptor"], c["victimPlacedBy"], c["victims"]] for c in racing["crossPreemptions"]]),
            "<h2>Preemption ping-pong</h2>" + table(
                ["schedulers", "rounds"], [[" <-> ".join(p["schedulers"]), p["rounds"]] for p in racing["pingPong"]])]


def simulation_report(result: dict[str, Any]) -> str:
    s = result["summary"]
    series = pod_counts_over_time(result["events"])
    sections = [
        f"<p>seed {result['seed']} &middot; ended at t={result['endTime']:g}s &middot; scheduled {s['scheduled']}, "
        f"pending {s['pending']}, preemptions {s['preemptions']}, victims {s['victims']}</p>",
        step_chart("Pods over time", {"pending": series["pending"], "running": series["running"]},
                   x_label="simulated seconds", y_label="pods", x_end=result["endTime"], integer=True),
        node_chart(result["nodes"]),
        *(svg for _, svg in cluster_charts(result)),
        *_topology_section(result.get("cluster") or {}),
        *_racing_section(result.get("racing")),
        "<h2>Pods</h2>" + table(["pod", "priority", "phase", "node", "nominated node"], [
            [k, p["priority"], p["phase"], p["node"] or "-", p["nominatedNodeName"] or "-"]
            for k, p in result["pods"].items()]),
        "<h2>Timeline</h2>" + table(["t (s)", "event", "pod", "node", "preemptor", "message"], [
            [f"{e['time']:g}", e["reason"], e["pod"], e.get("node") or "", e.get("preemptor") or "",
             e.get("message") or ""]
            for e in result["events"] if e["reason"] not in ("Created", "Started")]),
    ]
    return page(f"Simulation: {result['scenario']}", sections)
