"""``kubesched plan``: the fewest nodes of a template for which every goal holds in every seed's run."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.markup import escape

from kubesched.api.errors import KubeschedError
from kubesched.cli.jsonout import write_json
from kubesched.cli.options import live_cluster_options, report_unknown_fields, strict_option
from kubesched.cli.sweep import execution_options, executor, progress_bar, read_base, require_dask
from kubesched.cli.tables import Table, make_console
from kubesched.sweep.execute import OtherInputs, ResultStore, run_sweep, scenario_of
from kubesched.sweep.fingerprint import variant_inputs
from kubesched.sweep.plan import PLAN_KIND, Round, check_goals_against_base, load_plan, search
from kubesched.sweep.spec import Variant, check_against_base, pool_description
from kubesched.sweep.summary import base_text


@click.command()
@click.argument("plan_file", metavar="PLAN", type=click.Path(exists=True, dir_okay=False))
@live_cluster_options("the plan file's spec.base (which it may then leave out)")
@execution_options
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--progress/--no-progress", default=None, help="Show progress (default: when stderr is a terminal).")
@strict_option()
def plan(plan_file: str, kubeconfig: str | None, context: str | None, workers: int | None, local: bool,
         address: str | None, out_dir: str | None, redo: bool, output: str, progress: bool | None, strict: bool) -> None:
    """Find the fewest nodes of PLAN's pool (from its min to its max) for which every goal holds
    in every seed's simulation, by bisection; each round's simulations run in parallel, as a
    sweep's do (docs/sweeps.md). A min below the pool's size in the base searches downward too
    (counts below it leave out the pool's last nodes): how far an over-provisioned pool can shrink.
    With --kubeconfig the base is a live cluster, read once; a base naming a recorded history
    (spec.base: {history: ...}) is replayed by each run, and the replay's metrics may be goals."""
    require_dask("kubesched plan", workers, local, address)
    try:
        spec = load_plan(plan_file, base_given=kubeconfig is not None)
        base, origin = read_base(spec.sweep, kubeconfig, context)
        scenario = scenario_of(base)
        report_unknown_fields(scenario.warnings, strict)
        check_against_base(spec.sweep, scenario, PLAN_KIND)
        check_goals_against_base(spec, scenario, plan_file)
    except KubeschedError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    store = ResultStore(out_dir, variant_inputs(spec.sweep, base), redo)
    # one cluster, and the base sent to it once, for every round
    runner, note = executor(base, spec.sweep, workers, local, address, len(spec.sweep.seeds or [scenario.seed]))
    show = sys.stderr.isatty() if progress is None else progress

    def run(variants: list[Variant]) -> list[dict[str, Any]]:
        bar, advance = progress_bar(f"plan {spec.sweep.name}: "
                                    f"{variants[0].pool_count} nodes", len(variants), show)
        with bar:
            return run_sweep(runner, variants, store, progress=advance)

    try:
        with runner:
            answer, rounds = search(spec, scenario.seed, run)
    except OtherInputs as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("plan interrupted" + (f": the runs so far are kept in {out_dir}" if out_dir else ""), err=True)
        sys.exit(130)
    document = plan_document(spec.sweep.name, origin, pool_description(spec.sweep), answer, rounds,
                             [g.text for g in spec.goals], spec.low, spec.high)
    document["warnings"] = [w for g in spec.goals if (w := g.against_more_nodes()) is not None]
    if output == "json":
        write_json(document)
    else:
        _render(document, note)
    if answer is None:
        sys.exit(1)


def plan_document(name: str, base: dict[str, str], template: str, answer: int | None, rounds: list[Round],
                  goals: list[str], low: int, high: int) -> dict[str, Any]:
    """The answer, the margin (what fails with one node fewer), and every round's runs; ``base``:
    the cluster they started from (as a sweep's result records it)."""
    by_count = {r.count: r for r in rounds}
    below = by_count.get(answer - 1) if answer is not None else None
    return {
        "apiVersion": "kubesched.io/v1alpha1", "kind": "PlanResult", "plan": name, "base": base, "template": template,
        "goals": goals, "range": {"min": low, "max": high}, "answer": answer,
        "oneFewerFails": None if below is None else below.failures,
        "rounds": [{"count": r.count, "holds": r.holds, "failures": r.failures,
                    "variants": [v["id"] for v in r.records]} for r in rounds],
    }


def _render(document: dict[str, Any], note: str | None = None) -> None:
    console = make_console()
    goals = "; ".join(document["goals"])
    if document["answer"] is None:
        top = document["range"]["max"]
        console.print(f"[bold]{document['plan']}[/]: the goals ({goals}) do not hold even with "
                      f"{top} nodes like {document['template']}")
        failures: list[dict[str, Any]] = next((r["failures"] for r in document["rounds"] if r["count"] == top), [])
        if failures:
            _print_failure(console, top, failures[0])
    else:
        console.print(f"[bold]{document['plan']}[/]: {document['answer']} nodes like {document['template']} "
                      f"are the fewest for which every goal holds in every run ({goals})")
        if document["oneFewerFails"]:
            _print_failure(console, document["answer"] - 1, document["oneFewerFails"][0])
        elif document["answer"] == document["range"]["min"]:
            console.print("  (the smallest count of the range: fewer were not tried)")
    for warning in document.get("warnings", []):
        console.print(f"  [yellow]warning[/]: {escape(warning)}")
    console.print(f"  base: {escape(base_text(document['base']))}")
    if note is not None:
        console.print(f"  each round {note}")
    table = Table(title="Rounds", title_justify="left")
    for column in ("nodes", "goals hold", "runs failing a goal"):
        table.add_column(column)
    for r in document["rounds"]:
        failing = sorted({f["variant"] for f in r["failures"]})
        table.add_row(str(r["count"]), "yes" if r["holds"] else "no", ", ".join(failing) or "-")
    console.print(table)


def _print_failure(console: Any, count: int, failure: dict[str, Any]) -> None:
    """A run that fails a goal at ``count`` nodes, and the first pod left pending in it, with
    kube-scheduler's reason: what decides the answer."""
    console.print(f"  with {count}: {failure['variant']} fails {failure['goal'] or 'to run'} ({failure['value']})")
    pods = failure.get("pendingPods") or []
    if pods:
        console.print(f"    pending: {escape(pods[0]['pod'])}: {escape(pods[0]['message'] or 'not tried yet')}")
