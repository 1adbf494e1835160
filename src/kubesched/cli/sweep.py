"""``kubesched sweep``: many simulations of one cluster (seeds x configurations x changes x sizes),
on the cores of this machine or a Dask cluster, summed up per configuration."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from kubesched.api.errors import KubeschedError
from kubesched.api.loader import load_scenario
from kubesched.cli.extras import require_extra
from kubesched.cli.jsonout import write_json
from kubesched.cli.options import (
    live_cluster_options,
    load_live_cluster,
    output_file_option,
    report_unknown_fields,
    strict_option,
)
from kubesched.cli.tables import make_console, print_split
from kubesched.report.svg import shorten_distinct
from kubesched.sweep.execute import (
    Base,
    Executor,
    OnOutcome,
    OtherInputs,
    ResultStore,
    run_sweep,
    scenario_of,
)
from kubesched.sweep.fingerprint import variant_inputs
from kubesched.sweep.metrics import BY_RESOURCE, OPTIONAL
from kubesched.sweep.spec import Sweep, check_against_base, load_sweep
from kubesched.sweep.summary import (
    CLASS_HEADINGS,
    base_text,
    class_rows,
    format_summary,
    present_metrics,
    sweep_document,
    sweep_report,
    write_parquet,
)
from kubesched.sweep.variants import Outcome, pod_count

#: the metrics of the table output (all of them are in the JSON and Parquet outputs), and after them
#: the gang and volume metrics where the base has PodGroups or claims
TABLE_METRICS = ("pending", "schedulingLatencyP99", "preemptions", "victims", "pdbViolations", "evictions",
                 "cpuAllocation")


def execution_options(func: Any) -> Any:
    """Where the variants run (``--workers``, ``--local``, ``--dask``) and where they are kept (``--out``)."""
    func = click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
                        help="Write each variant's record and SimulationResult there as it finishes; run again "
                             "with the same directory, the variants already done are skipped (results there made from other "
                             "inputs are refused: see --redo).")(func)
    func = click.option("--redo", is_flag=True, default=False,
                        help="With --out: run again the variants whose results there were made from other inputs "
                             "(the sweep file, its base or a file it names changed since), instead of refusing "
                             "the directory.")(func)
    func = click.option("--dask", "address", metavar="ADDRESS", default=None,
                        help="Run on the Dask cluster whose scheduler is at ADDRESS (tcp://host:8786) instead; its "
                             "workers need kubesched installed.")(func)
    func = click.option("--local", is_flag=True, default=False,
                        help="Run the variants here, one after another, without Dask (as --workers 0).")(func)
    return click.option("--workers", type=click.IntRange(min=0), default=None,
                        help="Worker processes of a local Dask cluster (default: one per core, or, for a small "
                             "sweep (fewer variants than twice the cores, or under 20,000 pods in all), none: run here, "
                             "as the header says; 0: run the variants here, one after another).")(func)


def require_dask(command: str, workers: int | None, local: bool, address: str | None) -> None:
    """Exit naming the sweep extra unless the variants run here (``--local``, ``--workers 0``) or
    Dask can be imported."""
    if address is not None or not (local or workers == 0):
        require_extra(command, "sweep", ("dask", "distributed"),
                      hint=" (or run the variants here, one after another, with --local)")


#: below this many pods in all (variants x the base's pods), a sweep given no --workers runs in
#: process: a local Dask cluster takes seconds to start, more than it can save on a sweep this small
#: (on two cores, the demo's 20 variants take 2.7 s in process and 7.5 s on two workers)
SMALL_SWEEP_PODS = 20_000


def executor(base: Base, sweep: Sweep, workers: int | None, local: bool, address: str | None,
             variants: int) -> tuple[Executor, str | None]:
    """The executor the options ask for: here (``--local``, ``--workers 0``), on the Dask cluster at
    ``--dask``, else on a local Dask cluster of ``--workers`` processes (by default one per core,
    no more than there are variants); and, when the default chose to run here, why. Without
    ``--workers`` a small sweep runs here: fewer variants than twice the cores (the workers would
    each run one or two) or fewer than :data:`SMALL_SWEEP_PODS` pods in all."""
    if address is not None:
        if local or workers is not None:
            raise click.UsageError("--dask runs on that cluster's workers: --local and --workers go without it")
        return Executor(base, sweep, address=address), None
    if local:
        if workers not in (None, 0):
            raise click.UsageError("--local runs the variants here: --workers goes without it")
        return Executor(base, sweep), None
    if workers is not None:
        return Executor(base, sweep, workers=workers), None
    cores = os.cpu_count() or 1
    pods = pod_count(scenario_of(base))
    if variants < 2 * cores or variants * pods < SMALL_SWEEP_PODS:
        why = (f"{variants} variants, fewer than twice the {cores} cores" if variants < 2 * cores
               else f"{variants} variants of about {pods} pods")
        return Executor(base, sweep), (f"run in this process ({why}: too small for a local Dask cluster to pay "
                                       "for its start; --workers N for one)")
    return Executor(base, sweep, workers=max(1, min(variants, cores))), None


def read_base(spec: Sweep, kubeconfig: str | None, context: str | None) -> tuple[Base, dict[str, str]]:
    """The base of a sweep (or a plan), read once: the live cluster of ``--kubeconfig``, in place of
    the file's ``spec.base``, else that file, or the history it names (what was read and skipped
    written on stderr, as ``kubesched replay`` writes it); and what the result records of it."""
    if spec.history is not None:
        history = spec.history.read()
        for line in history.report.lines():
            click.echo(line, err=True)
        return history, spec.history.origin()
    if kubeconfig is not None:
        live = load_live_cluster(kubeconfig, context)
        return live.scenario, live.origin()
    if context is not None:
        raise click.UsageError("--context goes with --kubeconfig")
    return load_scenario(spec.base_path), {"file": spec.base_path}


def progress_bar(name: str, total: int, show: bool) -> tuple[Progress, OnOutcome]:
    """A progress bar on stderr (shown when ``show``): variants done, running and failed, the time
    so far and the time left; and the callback that advances it. ``total`` is a first guess: the
    callback sets it to the variants left to run (with ``--out``, those not done by an earlier run)."""
    bar = Progress(TextColumn("[bold]{task.description}[/]"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[state]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                   console=Console(stderr=True), transient=True, disable=not show)
    task = bar.add_task(name, total=total, state="")
    counts = {"done": 0, "failed": 0}

    def advance(outcome: Outcome | None, running: int, to_run: int) -> None:
        if outcome is not None:
            counts["failed" if outcome.error else "done"] += 1
        bar.update(task, total=to_run, completed=counts["done"] + counts["failed"],
                   state=f"done {counts['done']}, running {running}, failed {counts['failed']}")

    return bar, advance


@click.command()
@click.argument("sweep_file", metavar="SWEEP", type=click.Path(exists=True, dir_okay=False))
@live_cluster_options("the sweep file's spec.base (which it may then leave out)")
@execution_options
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table", show_default=True)
@output_file_option("--parquet", help="Also write one row per variant (axes, metrics) as Parquet.")
@output_file_option("--report", help="Also write an HTML report with plots.")
@click.option("--progress/--no-progress", default=None, help="Show progress (default: when stderr is a terminal).")
@strict_option()
def sweep(sweep_file: str, kubeconfig: str | None, context: str | None, workers: int | None, local: bool,
          address: str | None, out_dir: str | None, redo: bool, output: str, parquet: str | None, report: str | None,
          progress: bool | None, strict: bool) -> None:
    """Simulate every variant of SWEEP (a Sweep file: a base cluster and the axes to vary, see
    docs/sweeps.md) and report each configuration's metrics over its seeds: mean and 95 % interval;
    where the base has PodGroups or PersistentVolumeClaims, also the gangs never fully scheduled
    (incompleteGangs, incompleteGangPods) and the pods a volume keeps pending (volumePending). A node
    pool count above the pool's size adds copies of its first node, one below leaves out its last
    nodes (their pods then go as when a Node is deleted: collected after 40 s, replaced by their
    controllers). With --kubeconfig the base is a live cluster, read once (read-only) and sent to the workers as
    a file's base is; the result records which kubeconfig and context. A base that names a recorded
    history (spec.base: {history: AUDIT-LOG-OR-OPENB-TRACE, from, to, ...}) is replayed by each
    variant: the metrics add the agreement with the recording, the window's node-hours and, where the
    nodes have GPUs, the GPU allocation over the arrived GPU workload (docs/sweeps.md)."""
    require_dask("kubesched sweep", workers, local, address)
    if parquet:
        require_extra("kubesched sweep --parquet", "sweep", ("pyarrow",))
    try:
        spec = load_sweep(sweep_file, base_given=kubeconfig is not None)
        base, origin = read_base(spec, kubeconfig, context)
        report_unknown_fields(scenario_of(base).warnings, strict)
        check_against_base(spec, scenario_of(base))
    except KubeschedError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    variants = spec.variants(scenario_of(base).seed)
    runner, note = executor(base, spec, workers, local, address, len(variants))
    store = ResultStore(out_dir, variant_inputs(spec, base), redo)
    try:
        store.check(variants)  # before any worker starts
    except OtherInputs as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    started = time.monotonic()
    bar, advance = progress_bar(f"sweep {spec.name}", len(variants),
                                sys.stderr.isatty() if progress is None else progress)
    with bar:
        try:
            with runner:
                records = run_sweep(runner, variants, store, progress=advance)
        except KeyboardInterrupt:
            click.echo("sweep interrupted: the variants finished so far are kept"
                       + (f" in {out_dir}; run it again to go on" if out_dir else ""), err=True)
            sys.exit(130)
    document = sweep_document(spec.name, records, origin)
    if parquet:
        write_parquet(records, parquet)
    if report:
        Path(report).write_text(sweep_report(document))
    if output == "json":
        write_json(document)
    else:
        _render(document, time.monotonic() - started, note)
    if any(r["error"] for r in records):
        sys.exit(1)


def _render(document: dict[str, Any], seconds: float, note: str | None = None) -> None:
    console = make_console()
    variants = document["variants"]
    console.print(f"[bold]Sweep {document['sweep']}[/]: {_count(len(variants), 'variant')} in "
                  f"{_count(len(document['configurations']), 'configuration')}, {seconds:.1f} s; means over seeds "
                  "± the half-width of their 95 % interval")
    if note is not None:
        console.print(note)
    console.print(f"base: {escape(base_text(document['base']))}")
    configurations = document["configurations"]
    shown = TABLE_METRICS + tuple(m for m in present_metrics([c["metrics"] for c in configurations])
                                  if m in OPTIONAL)
    resources = sorted({r for c in configurations for r in c.get(BY_RESOURCE, {})})
    columns = [("runs", [str(c["runs"]) + (f" ({c['failed']} failed)" if c["failed"] else "") for c in configurations])]
    columns += [(m, [format_summary(c["metrics"][m]) if m in c["metrics"] else "-" for c in configurations])
                for m in shown]
    columns += [(f"{r} allocation", [format_summary(c[BY_RESOURCE][r]) if r in c.get(BY_RESOURCE, {}) else "-"
                                     for c in configurations]) for r in resources]
    heading, labels = configuration_labels(configurations, console.width)
    print_split(console, [(heading, [labels[c["configuration"]] for c in configurations])], columns)
    names, classes, cells = [], [], []
    for c in configurations:
        for name, row in class_rows(c):
            names.append(labels[c["configuration"]])
            classes.append(name)
            cells.append(row)
    if cells:
        print_split(console, [(heading, names), ("class", classes)],
                    [(h, [row[i] for row in cells]) for i, h in enumerate(CLASS_HEADINGS)],
                    title="By PriorityClass (-: pods of none; preemptions under the preemptor's class)")
    for v in variants:
        if v["error"]:
            console.print(f"[red]failed[/] {v['id']}: {v['error']}")


def configuration_labels(configurations: list[dict[str, Any]], width: int) -> tuple[str, dict[str, str]]:
    """The configuration column's heading and each configuration's name in it: the whole name
    (``schedulerConfig=default,change=as-is``) on a console wide enough for it beside a few columns
    (a third of its width), else the axes' values alone under a heading naming the axes (``default,as-is``
    under ``schedulerConfig,change``), shortened where they stay distinct if still too long."""
    names = [c["configuration"] for c in configurations]
    room = max(width // 3, 16)
    axes = list(configurations[0]["axes"]) if configurations else []
    if max(map(len, names), default=0) <= room or not axes \
            or any(list(c["axes"]) != axes for c in configurations):
        return "configuration", dict(zip(names, shorten_distinct(names, room), strict=True))
    values = [",".join(str(v) for v in c["axes"].values()) for c in configurations]
    if len(set(values)) < len(values):
        return "configuration", dict(zip(names, names, strict=True))
    return ", ".join(axes), dict(zip(names, shorten_distinct(values, room), strict=True))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
