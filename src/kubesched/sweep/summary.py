"""A sweep's answer: each configuration's metrics over its seeds, as a document (JSON), a table of
rows for Parquet, and an HTML report whose plots show a metric against a swept number (node
count, replica factor, arrival rate), one line per configuration, its 95 % interval shaded; without
one, a bar per configuration with its interval as a whisker."""

from __future__ import annotations

from html import escape
from typing import Any

from kubesched.report.svg import band_chart, bar_chart
from kubesched.sweep.gpu_curve import CURVE
from kubesched.sweep.metrics import BY_RESOURCE, COUNTS_BY_CLASS, LATENCIES, OPTIONAL, SCALARS, summarise

#: the swept numbers a plot can put on its x axis
NUMERIC_AXES = ("nodePoolCount", "replicaFactor", "arrivalRate")
#: the metrics the report plots (and the optional ones the configurations have)
PLOTTED = ("pending", "schedulingLatencyP99", "preemptions", "victims", "pdbViolations", "cpuAllocation")


def present_metrics(metrics: list[dict[str, Any]]) -> tuple[str, ...]:
    """The scalar metrics of these variants' (or configurations') metrics: every one of
    :data:`SCALARS`, and those of :data:`OPTIONAL` that some of them have (the gang metrics where
    the cluster has PodGroups, ``volumePending`` where it has claims)."""
    return SCALARS + tuple(m for m in OPTIONAL if any(m in entry for entry in metrics))


def aggregate(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per configuration (the variants that differ only in their seed), in sweep order;
    an optional metric over the runs that have it."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault(record["configuration"], []).append(record)
    out = []
    for configuration, group in groups.items():
        done = [r for r in group if r["error"] is None]
        axes = {k: v for k, v in group[0]["axes"].items() if k != "seed"}
        metrics = [r["metrics"] for r in done]
        out.append({
            "configuration": configuration, "axes": axes, "runs": len(group), "failed": len(group) - len(done),
            "metrics": {m: summarise([r.get(m) for r in metrics]) for m in present_metrics(metrics)},
            **{by: _latencies_by(metrics, by) for by in ("byClass", "byNamespace")},
            **{counts: _counts_by_class(metrics, counts) for counts in COUNTS_BY_CLASS},
            BY_RESOURCE: _by_resource(metrics),
            **({CURVE: _curve(metrics)} if any(CURVE in m for m in metrics) else {}),
        })
    return out


def _curve(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """The GPU allocation curve over the runs: at each arrived fraction some run reached, the
    allocated fraction's summary over the runs that reached it."""
    xs = sorted({x for m in metrics for x in (m.get(CURVE) or {}).get("arrived", [])})
    at = [dict(zip(m[CURVE]["arrived"], m[CURVE]["allocated"], strict=True)) for m in metrics if CURVE in m]
    return {"arrived": xs, "allocated": [summarise([points.get(x) for points in at]) for x in xs]}


def _latencies_by(metrics: list[dict[str, Any]], by: str) -> dict[str, dict[str, Any]]:
    """Each class's (or namespace's) latencies over the runs in which some of its pods were
    scheduled (``n`` says in how many)."""
    keys = sorted({k for m in metrics for k in m[by]})
    return {k: {q: summarise([m[by][k][q] for m in metrics if k in m[by]]) for q in LATENCIES} for k in keys}


def _by_resource(metrics: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each extended resource's allocation over the runs whose nodes have it."""
    keys = sorted({k for m in metrics for k in m.get(BY_RESOURCE, {})})
    return {k: summarise([m[BY_RESOURCE][k] for m in metrics if k in m.get(BY_RESOURCE, {})]) for k in keys}


def _counts_by_class(metrics: list[dict[str, Any]], counts: str) -> dict[str, dict[str, Any]]:
    """Each class's count over every run (0 in a run that has none of it)."""
    keys = sorted({k for m in metrics for k in m[counts]})
    return {k: summarise([m[counts].get(k, 0) for m in metrics]) for k in keys}


#: the per-class table's columns: the class's latencies and counts, each mean ± half-width
CLASS_COLUMNS = ("schedulingLatencyP50", "schedulingLatencyP99", "preemptionsByClass", "victimsByClass")
#: their headings (the class is the row's: a preemption is counted under the preemptor's class)
CLASS_HEADINGS = ("schedulingLatencyP50", "schedulingLatencyP99", "preemptions", "victims")
_NO_VALUE = {"mean": None, "ci95": None, "min": None, "max": None, "n": 0}


def class_rows(configuration: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Per PriorityClass of a configuration (``-``: pods of no class): its latencies, preemptions
    (as preemptor) and victims, formatted as the tables show them."""
    classes = sorted({*configuration["byClass"], *configuration["preemptionsByClass"], *configuration["victimsByClass"]})
    rows = []
    for name in classes:
        latencies = configuration["byClass"].get(name, {})
        cells = [format_summary(latencies.get(c) or _NO_VALUE)
                 if c in LATENCIES else format_summary(configuration[c].get(name) or {**_NO_VALUE, "mean": 0})
                 for c in CLASS_COLUMNS]
        rows.append((name or "-", cells))
    return rows


def sweep_document(name: str, records: list[dict[str, Any]], base: dict[str, str]) -> dict[str, Any]:
    """``base``: the cluster (or history) the variants started from, as :func:`base_text` reads it."""
    return {"apiVersion": "kubesched.io/v1alpha1", "kind": "SweepResult", "sweep": name, "base": base,
            "configurations": aggregate(records), "variants": records}


def base_text(base: dict[str, str]) -> str:
    """Where a sweep's (or a plan's) base came from: ``{"file": PATH}`` (the file's ``spec.base``),
    or ``{"kubeconfig": FILE, "context": NAME}`` (a live cluster read once through --kubeconfig), or
    ``{"history": PATH, "format": ..., "from": ..., "to": ...}`` (a recorded history replayed)."""
    if "kubeconfig" in base:
        return f"live cluster (kubeconfig {base['kubeconfig']}, context {base['context']})"
    if "history" in base:  # a recorded history, each variant a replay of it
        window = "".join(f" {k} {base[k]}" for k in ("from", "to") if k in base)
        return f"history {base['history']} ({base['format']}{window})"
    return base["file"]


def parquet_rows(records: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Columns of one row per variant: its axes, its scalar metrics, its error (for notebooks)."""
    axes = sorted({k for r in records for k in r["axes"]})
    columns: dict[str, list[Any]] = {"id": [r["id"] for r in records],
                                     "configuration": [r["configuration"] for r in records]}
    for axis in axes:
        columns[axis] = [r["axes"].get(axis) for r in records]
    for metric in present_metrics([r["metrics"] for r in records if r["metrics"] is not None]):
        columns[metric] = [None if r["metrics"] is None else r["metrics"].get(metric) for r in records]
    for name, values in _per_group_columns([r["metrics"] or {} for r in records]).items():
        columns[name] = values
    columns["error"] = [r["error"] for r in records]
    columns["seconds"] = [r["seconds"] for r in records]
    return columns


def _per_group_columns(metrics: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """``byClass.CLASS.METRIC``, ``byNamespace.NAMESPACE.METRIC``, ``preemptionsByClass.CLASS`` and
    ``victimsByClass.CLASS`` columns (``-``: pods of no class); a count is 0 where a run has none."""
    columns: dict[str, list[Any]] = {}
    for by in ("byClass", "byNamespace"):
        for key in sorted({k for m in metrics for k in m.get(by, {})}):
            for q in LATENCIES:
                columns[f"{by}.{key or '-'}.{q}"] = [m[by][key][q] if key in m.get(by, {}) else None for m in metrics]
    for counts in COUNTS_BY_CLASS:
        for key in sorted({k for m in metrics for k in m.get(counts, {})}):
            columns[f"{counts}.{key or '-'}"] = [m[counts].get(key, 0) if counts in m else None for m in metrics]
    for key in sorted({k for m in metrics for k in m.get(BY_RESOURCE, {})}):
        columns[f"{BY_RESOURCE}.{key}"] = [m.get(BY_RESOURCE, {}).get(key) for m in metrics]
    if any(CURVE in m for m in metrics):  # lists: the arrived fractions and the allocation at each
        for part in ("arrived", "allocated"):
            columns[f"{CURVE}.{part}"] = [(m.get(CURVE) or {}).get(part) for m in metrics]
    return columns


def write_parquet(records: list[dict[str, Any]], path: str) -> None:
    columns = parquet_rows(records)
    write_columns({k: [None if v is None else str(v) for v in vals] if k in ("schedulerConfig", "change") else vals
                   for k, vals in columns.items()}, path)


def write_columns(columns: dict[str, list[Any]], path: str, metadata: dict[str, str] | None = None,
                  types: dict[str, str] | None = None) -> None:
    """A Parquet file of these columns (a column's type: ``types``' name of it, ``string``,
    ``float64``, ``bool``, else inferred from its values; None a null), with ``metadata`` as the
    file schema's key-value metadata: the sweep's writer, and ``kubesched replay --parquet``'s."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    given = types or {}
    table = pa.table({k: pa.array(vals, type=pa.type_for_alias(given[k])) if k in given else pa.array(vals)
                      for k, vals in columns.items()})
    if metadata:
        table = table.replace_schema_metadata(metadata)
    pq.write_table(table, path)


def _band(summary: dict[str, Any]) -> tuple[float, float, float] | None:
    mean = summary["mean"]
    if mean is None:
        return None
    half = summary["ci95"] or 0.0
    return (mean - half, mean, mean + half)


def _plots(configurations: list[dict[str, Any]]) -> list[str]:
    numeric = [a for a in NUMERIC_AXES if len({c["axes"].get(a) for c in configurations}) > 1]
    plotted = PLOTTED + present_metrics([c["metrics"] for c in configurations])[len(SCALARS):]
    charts = []
    for axis in numeric:
        xs = sorted({c["axes"][axis] for c in configurations})
        lines: dict[str, dict[float, dict[str, Any]]] = {}
        for c in configurations:
            rest = ",".join(f"{k}={v}" for k, v in c["axes"].items() if k != axis) or "base"
            lines.setdefault(rest, {})[c["axes"][axis]] = c["metrics"]
        for metric in plotted:
            series = {name: [_band(by_x[x].get(metric, _NO_VALUE)) if x in by_x else None for x in xs]
                      for name, by_x in lines.items()}
            charts.append(band_chart(f"{metric} against {axis}", [float(x) for x in xs], series,
                                     x_label=axis, y_label=metric))
    curves = {c["configuration"]: c[CURVE] for c in configurations if CURVE in c}
    if curves:
        charts.append(gpu_curve_chart(curves))
    if not numeric:
        names = [c["configuration"] for c in configurations]
        for metric in plotted:
            summaries = [c["metrics"].get(metric, _NO_VALUE) for c in configurations]
            charts.append(bar_chart(f"{metric} (mean over seeds, 95 % interval)", names,
                                    {metric: [s["mean"] or 0.0 for s in summaries]}, y_label=metric,
                                    errors={metric: [s["ci95"] or 0.0 for s in summaries]}))
    return charts


def gpu_curve_chart(curves: dict[str, dict[str, Any]]) -> str:
    """GPU allocation against the arrived GPU workload, one line per configuration (its 95 %
    interval over the seeds shaded), and the line of a cluster that places all that arrives."""
    xs = sorted({x for c in curves.values() for x in c["arrived"]})
    series: dict[str, list[tuple[float, float, float] | None]] = {}
    for name, curve in curves.items():
        by_x = dict(zip(curve["arrived"], curve["allocated"], strict=True))
        series[name] = [_band(by_x[x]) if x in by_x else None for x in xs]
    series["all placed (allocated = arrived, up to the capacity)"] = [(min(x, 1.0),) * 3 for x in xs]
    return band_chart("GPU allocation against arrived GPU workload", xs, series,
                      x_label="arrived GPU workload / GPU capacity", y_label="allocated GPU / GPU capacity")


def sweep_report(document: dict[str, Any]) -> str:
    """A self-contained HTML page: the plots, then the table of configurations."""
    from kubesched.report.html import STYLE

    configurations = document["configurations"]
    shown = present_metrics([c["metrics"] for c in configurations])
    head = "".join(f"<th>{escape(h)}</th>" for h in ("configuration", "runs", "failed", *shown))
    rows = []
    for c in configurations:
        cells = [c["configuration"], c["runs"], c["failed"]] + [format_summary(c["metrics"].get(m) or _NO_VALUE)
                                                                 for m in shown]
        rows.append("<tr>" + "".join(f"<td>{escape(str(cell))}</td>" for cell in cells) + "</tr>")
    class_head = "".join(f"<th>{escape(h)}</th>" for h in ("configuration", "PriorityClass", *CLASS_HEADINGS))
    class_table = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in (c["configuration"], name, *cells))
                          + "</tr>" for c in configurations for name, cells in class_rows(c))
    failed = [v for v in document["variants"] if v["error"] is not None]
    errors = "".join(f"<li>{escape(v['id'])}: {escape(v['error'])}</li>" for v in failed)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Sweep {escape(document['sweep'])}</title>"
            f"<style>{STYLE}</style></head><body><h1>Sweep {escape(document['sweep'])}</h1>"
            f"<p>{len(document['variants'])} variants in {len(configurations)} configurations of "
            f"{escape(base_text(document['base']))}; means over seeds with their 95 % intervals.</p>" + "\n".join(_plots(configurations))
            + f"<h2>Configurations</h2><table><tr>{head}</tr>{''.join(rows)}</table>"
            + (f"<h2>By PriorityClass</h2><table><tr>{class_head}</tr>{class_table}</table>" if class_table else "")
            + (f"<h2>Failed variants</h2><ul>{errors}</ul>" if errors else "") + "</body></html>\n")


def format_summary(summary: dict[str, Any]) -> str:
    """``mean ± half-width`` (the 95 % interval), ``-`` where the metric has no value."""
    mean = summary["mean"]
    if mean is None:
        return "-"
    text = f"{mean:.3g}" if not float(mean).is_integer() else f"{mean:.0f}"
    return text if not summary["ci95"] else f"{text} ± {summary['ci95']:.2g}"
