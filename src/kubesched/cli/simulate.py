"""``kubesched simulate``: run a scenario on the embedded cluster."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from kubesched.api.errors import KubeschedError
from kubesched.api.loader import Scenario, load_scenario
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
from kubesched.report.html import simulation_report
from kubesched.sim import simulate as simulate_scenario


def run_simulation(
    scenario: Scenario, seed: int | None, until: float | None, explain: bool, show_progress: bool
) -> dict[str, Any]:
    """Simulate; return the SimulationResult (with the decision sections when ``explain``).
    Raises KubeschedError on bad input."""
    if not show_progress:
        return simulate_scenario(scenario, seed=seed, until=until, explain=explain).result
    console = Console(stderr=True)
    with Progress(
        TextColumn("[bold]simulating[/] {task.description}"),
        BarColumn(),
        TextColumn("t={task.fields[now]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(scenario.name, total=until or scenario.until or None, now="0s")

        def report(now: float, end: float | None) -> None:
            progress.update(task, completed=now, now=f"{now:g}s")

        return simulate_scenario(scenario, seed=seed, until=until, explain=explain, progress=report).result


@click.command()
@click.argument("scenario", type=INPUT_PATH)
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="table for people, json for programs (the SimulationResult contract).")
@seed_option()
@duration_option("--until", help="Simulated end time (e.g. 10m); default: the scenario's, else until nothing more can happen.")
@click.option("--explain", "explain_pod", metavar="POD", default=None,
              help="Print why POD (namespace/name or name) was placed, pending or preempted.")
@click.option("--decisions", is_flag=True,
              help="With --output json: include every scheduling attempt and preemption decision (the table "
                   "output has no room for them: use --explain POD there).")
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
        result = run_simulation(loaded, seed, until, decisions or explain_pod is not None, show_progress)
    except KubeschedError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    if explain_pod is not None and find_pod(result, explain_pod) is None:
        click.echo(f"error: --explain: no pod {explain_pod!r} in this simulation", err=True)
        sys.exit(2)
    if report:
        Path(report).write_text(simulation_report(result))
    if output == "json":
        click.echo(json.dumps(result, indent=2))
        return
    console = Console(highlight=False)
    render_result(console, result)
    if explain_pod is not None:
        render_explain(console, result, explain_pod)
    if report:
        console.print(f"HTML report written to {report}")
