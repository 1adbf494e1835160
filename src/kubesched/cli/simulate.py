"""``kubesched simulate``: run a scenario on the embedded cluster."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from kubesched.analysis.grouping import POOL_LABELS, cluster_facts
from kubesched.analysis.scheduler_profiles import unserved_pods, unserved_warning
from kubesched.api.errors import KubeschedError
from kubesched.api.loader import Scenario, load_scenario
from kubesched.cli.jsonout import write_json
from kubesched.cli.options import (
    INPUT_PATH,
    duration_option,
    one_standard_input,
    output_file_option,
    report_unknown_fields,
    scheduler_config_option,
    seed_option,
    strict_option,
    with_scheduler_config,
)
from kubesched.cli.render import find_pod, render_explain, render_result
from kubesched.cli.tables import make_console
from kubesched.report.html import simulation_report
from kubesched.sim import simulate as simulate_scenario
from kubesched.sim.outcome import SimulationOutcome
from kubesched.sim.runner import RunStatus


def run_simulation(
    scenario: Scenario, seed: int | None, until: float | None, explain: bool, show_progress: bool
) -> SimulationOutcome:
    """Simulate; return the outcome (its result with the decision sections when ``explain``).
    Raises KubeschedError on bad input."""
    if not show_progress:
        return simulate_scenario(scenario, seed=seed, until=until, explain=explain, owned=True)
    console = Console(stderr=True)
    with Progress(
        TextColumn("[bold]simulating[/] {task.description}"),
        BarColumn(),
        TextColumn("{task.fields[state]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        end = until or scenario.until
        task = progress.add_task(scenario.name, total=end or None, state="t=0s")
        started = time.monotonic()

        def report(status: RunStatus) -> None:
            elapsed = time.monotonic() - started
            rate = f", {status.cycles / elapsed:,.0f} attempts/s" if elapsed > 0.5 else ""
            state = (f"t={status.now:g}s  running {status.running:,}  pending {status.pending:,}  "
                     f"finished {status.finished:,}{rate}")
            progress.update(task, completed=status.now if end else None, state=state)

        return simulate_scenario(scenario, seed=seed, until=until, explain=explain, progress=report, owned=True)


@click.command()
@click.argument("scenario", type=INPUT_PATH)
@click.option("--output", "-o", type=click.Choice(["table", "wide", "json"]), default="table", show_default=True,
              help="table for people (as wide as the terminal: long names shortened where they stay distinct; "
                   "piped, as wide as the rows, or $COLUMNS), wide: tables with every name whole (kubectl's -o "
                   "wide), json for programs (the SimulationResult contract).")
@seed_option()
@duration_option("--until", help="Simulated end time (e.g. 10m); default: the scenario's, else until nothing more can happen.")
@click.option("--explain", "explain_pod", metavar="POD", default=None,
              help="Print why POD (namespace/name or name) was placed, pending or preempted.")
@click.option("--decisions", is_flag=True,
              help="With --output json: include every scheduling attempt and preemption decision (the table "
                   "output has no room for them: use --explain POD there).")
@click.option("--events", "events_limit", type=click.IntRange(min=0), default=60, show_default=True,
              help="Timeline rows in the table output (0: all). Created and Started events are left out; above "
                   "200 pods, pods failing alike at the same moment share a row (--pods all: one each).")
@click.option("--pods", "pods_listing", type=click.Choice(["auto", "all"]), default="auto", show_default=True,
              help="auto: above 200 pods (nodes), the table output summarises them by workload: the pods' "
                   "controller (node pool: see --pool-label); all: one row per pod and per node.")
@click.option("--pool-label", metavar="KEY", default=None,
              help="The node label that names node pools in the summary of nodes (default: the first of "
                   f"{', '.join(POOL_LABELS)} a node has; nodes with none are grouped by name).")
@click.option("--as-read", "as_read_by", type=click.Choice(["namespace", "class"]), multiple=True,
              help="For a snapshot: also tabulate its pods as read (running, pending, terminating, ...) per "
                   "namespace or per PriorityClass (repeat for both). The table output always states the "
                   "totals; the JSON output has all of it under snapshot.asRead.")
@scheduler_config_option("KubeSchedulerConfiguration to simulate with, instead of the scenario's own.")
@strict_option()
@click.option("--progress/--no-progress", default=None, help="Show a progress bar (default: when stderr is a terminal).")
@output_file_option("--report",
                    help="Also write a self-contained HTML report (plots of pods over time and node utilisation).")
def simulate(
    scenario: str,
    output: str,
    seed: int | None,
    until: float | None,
    explain_pod: str | None,
    decisions: bool,
    events_limit: int,
    pods_listing: str,
    pool_label: str | None,
    as_read_by: tuple[str, ...],
    progress: bool | None,
    report: str | None,
    scheduler_config: str | None,
    strict: bool,
) -> None:
    """Simulate SCENARIO (a YAML or JSON file, a directory of them, or - for standard input) and report
    what the scheduler did."""
    if decisions and output != "json":
        raise click.UsageError("--decisions adds to the JSON output: use it with --output json")
    one_standard_input(scenario, scheduler_config)
    show_progress = sys.stderr.isatty() if progress is None else progress
    try:
        loaded = with_scheduler_config(load_scenario(scenario), scheduler_config)
        report_unknown_fields(loaded.warnings, strict)
        outcome = run_simulation(loaded, seed, until, decisions or explain_pod is not None, show_progress)
    except KubeschedError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    result = outcome.result
    served = [name for scheduler in outcome.simulation.schedulers for name in scheduler.frameworks]
    unserved = unserved_warning(unserved_pods(outcome.scheduler, served), served)
    if unserved is not None:  # the scheduler says nothing of pods it is not asked to schedule
        click.echo(f"warning: {unserved}", err=True)
    if explain_pod is not None and find_pod(result, explain_pod) is None:
        click.echo(f"error: --explain: no pod {explain_pod!r} in this simulation", err=True)
        sys.exit(2)
    if report:
        Path(report).write_text(simulation_report(result))
    if output == "json":
        write_json(result)
        return
    console = make_console(wide=output == "wide")
    render_result(console, result, cluster_facts(outcome, pool_label), events_limit or None,
                  list_every_pod=pods_listing == "all", as_read_by=as_read_by)
    if explain_pod is not None:
        render_explain(console, result, explain_pod)
    if report:
        console.print(f"HTML report written to {report}")
