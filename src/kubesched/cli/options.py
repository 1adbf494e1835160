"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kubesched.api.durations import parse_duration

if TYPE_CHECKING:
    from kubesched.api.errors import Location
    from kubesched.api.loader import Scenario


def _to_seconds(_ctx: click.Context, _param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = parse_duration(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from err
    if seconds < 0:
        raise click.BadParameter(f"{value!r}: a simulated time cannot be negative")
    return seconds


def duration_option(*names: str, help: str) -> Callable[[Any], Any]:
    """A Go-style duration option (``250ms``, ``5s``, ``10m``) parsed to seconds; never negative."""
    return click.option(*names, callback=_to_seconds, default=None, metavar="DURATION", help=help)


def seed_option(help: str = "Override the scenario's seed.") -> Callable[[Any], Any]:
    """``--seed``: a non-negative integer (NumPy's seed sequences take no negative entropy)."""
    return click.option("--seed", type=click.IntRange(min=0), default=None, help=help)


def _output_file(_ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An output file's directory must exist before anything runs, so that a typo loses no work."""
    if value is None:
        return None
    parent = Path(value).parent
    if not parent.is_dir():
        raise click.BadParameter(f"{value!r}: directory {str(parent)!r} does not exist")
    return value


def output_file_option(*names: str, help: str) -> Callable[[Any], Any]:
    """An option naming a file to write (its directory is checked up front)."""
    return click.option(*names, type=click.Path(dir_okay=False), callback=_output_file, default=None,
                        metavar="FILE", help=help)


def read_scheduler_config(path: str, param_hint: str) -> tuple[dict[str, Any], Location]:
    """A KubeSchedulerConfiguration file (``-``: standard input): one document, of that kind, without
    unknown fields, whose top level the scheduler accepts; problems are reported against the option.
    Also where the configuration was read (the file and document that errors found later, when a
    scheduler is built from it, name)."""
    from kubesched.analysis.scheduler_config import SchedulerConfigError, read_checked_scheduler_config

    try:
        loaded, location = read_checked_scheduler_config(path)
    except SchedulerConfigError as exc:
        raise click.BadParameter(str(exc), param_hint=param_hint) from exc
    return loaded, location


#: an input path: a file or a directory, or ``-`` for standard input
INPUT_PATH = click.Path(exists=True, allow_dash=True)


def strict_option() -> Callable[[Any], Any]:
    """``--strict``: unknown fields are errors instead of warnings."""
    return click.option("--strict", is_flag=True,
                        help="Refuse objects with fields their kind does not declare (typos such as nodeSelectr), "
                             "as kubectl's strict field validation does; without it each is a warning on stderr.")


def scheduler_config_option(help: str) -> Callable[[Any], Any]:
    """``--scheduler-config FILE`` (``-``: standard input), loaded by :func:`read_scheduler_config`."""
    return click.option("--scheduler-config", type=click.Path(exists=True, dir_okay=False, allow_dash=True),
                        default=None, metavar="FILE", help=help)


def report_unknown_fields(warnings: list[Any], strict: bool) -> None:
    """Each warning about the input (unknown fields, notices such as a pod bound to a missing node) as
    a line on stderr, or (``strict``) the unknown fields as one ManifestError."""
    from kubesched.api.loader import strict_error

    error = strict_error(warnings) if strict else None
    if error is not None:
        raise error
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)


def one_standard_input(*paths: str | None) -> None:
    """Refuse ``-`` (standard input) given for more than one input: it can be read only once."""
    if sum(1 for p in paths if p == "-") > 1:
        raise click.UsageError("standard input (-) can be read only once: give it to one argument or option")


def with_scheduler_config(scenario: Any, path: str | None) -> Any:
    """The scenario with the KubeSchedulerConfiguration of ``--scheduler-config`` (replacing its own)."""
    if path is not None:
        scenario.scheduler_configuration, scenario.scheduler_configuration_source = read_scheduler_config(
            path, "--scheduler-config")
        scenario.scheduler_configuration_dir = None if path == "-" else str(Path(path).parent)
    return scenario


def live_cluster_options(instead_of: str) -> Callable[[Any], Any]:
    """``--kubeconfig FILE [--context C]``: a live cluster read once, read-only (only GET requests),
    instead of ``instead_of`` (the input it replaces, as the help names it)."""
    def decorate(func: Any) -> Any:
        func = click.option("--context", default=None,
                            help="With --kubeconfig: the kubeconfig context (default: its current-context).")(func)
        return click.option("--kubeconfig", default=None, type=click.Path(exists=True, dir_okay=False),
                            help="Read the cluster (nodes, pods, workloads, PDBs, classes, quotas, services, "
                                 f"namespaces) from this kubeconfig's API server, read-only, instead of "
                                 f"{instead_of}.")(func)
    return decorate


#: ``SNAPSHOT`` (a scenario, manifests or a `kubectl get -o yaml` dump) or a live cluster
cluster_source_options = live_cluster_options("SNAPSHOT")


@dataclass(frozen=True)
class LiveCluster:
    """A live cluster read once through ``--kubeconfig``: its objects as a Scenario, and which
    cluster it was (the kubeconfig file and the context used)."""

    scenario: Scenario
    kubeconfig: str
    context: str

    def describe(self) -> str:
        return f"live cluster (kubeconfig {self.kubeconfig}, context {self.context})"

    def origin(self) -> dict[str, str]:
        """What a result records of the cluster it started from."""
        return {"kubeconfig": self.kubeconfig, "context": self.context}


def read_live_cluster(kubeconfig: str, context: str | None) -> tuple[Any, str]:
    """Read a live cluster (read-only), telling on stderr what was read when it is a terminal and
    what could not be (missing RBAC) in any case; and the name of the context used. Raises
    KubeschedError when the kubeconfig cannot be used (no such context, say) or the API server
    fails."""
    import sys

    from kubesched.api.errors import KubeschedError
    from kubesched.cluster.kube.snapshot import snapshot_transport, take_snapshot
    from kubesched.cluster.kube.transport import kubeconfig_context
    from kubesched.k8s.objects import ApiError

    def progress(resource: Any, count: int) -> None:
        if sys.stderr.isatty():
            click.echo(f"read {count} {resource.plural}", err=True)

    try:
        transport = snapshot_transport(kubeconfig, context)
        used = kubeconfig_context(kubeconfig, context)
    except Exception as err:  # as kubesched snapshot says it: unreadable, no such context, bad credentials
        raise KubeschedError(f"cannot use {kubeconfig}: {err}") from err
    try:
        result = take_snapshot(transport, progress)
    except ApiError as err:
        raise KubeschedError(f"reading the cluster failed: {err.code} {err.message}") from err
    except OSError as err:
        raise KubeschedError(f"cannot reach the API server of {kubeconfig}: {err}") from err
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    return result, used


def load_live_cluster(kubeconfig: str, context: str | None) -> LiveCluster:
    """The live cluster of ``--kubeconfig``/``--context``, read once, as a Scenario."""
    from kubesched.api.loader import scenario_from_objects
    from kubesched.cli.extras import require_extra

    require_extra("--kubeconfig", "kube", ("kubernetes",))
    snapshot_read, used = read_live_cluster(kubeconfig, context)
    scenario = scenario_from_objects(snapshot_read.objects, "live-cluster", f"cluster ({kubeconfig})")
    return LiveCluster(scenario, kubeconfig, used)


def load_source(snapshot: str | None, kubeconfig: str | None, context: str | None,
                argument: str = "SNAPSHOT") -> Any:
    """The Scenario to start from: a file/directory, or a live cluster's snapshot (``argument``: the
    file's argument, as the command's usage names it)."""
    from kubesched.api.loader import load_scenario

    if kubeconfig is not None:
        if snapshot is not None:
            raise click.UsageError(f"give either {argument} or --kubeconfig, not both")
        return load_live_cluster(kubeconfig, context).scenario
    if context is not None:
        raise click.UsageError("--context goes with --kubeconfig")
    if snapshot is None:
        raise click.UsageError(f"give a {argument} file or directory (- for standard input), or --kubeconfig")
    return load_scenario(snapshot)
