"""Options shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from kubesched.api.durations import parse_duration


def _to_seconds(_ctx: click.Context, _param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from err


def duration_option(*names: str, help: str) -> Callable[[Any], Any]:
    """A Go-style duration option (``250ms``, ``5s``, ``10m``) parsed to seconds."""
    return click.option(*names, callback=_to_seconds, default=None, metavar="DURATION", help=help)


def cluster_source_options(func: Any) -> Any:
    """``SNAPSHOT`` (a scenario, manifests or a `kubectl get -o yaml` dump) or a live cluster read
    through ``--kubeconfig`` (read-only: only GET requests)."""
    func = click.option("--context", default=None, help="With --kubeconfig: the kubeconfig context.")(func)
    func = click.option("--kubeconfig", default=None, type=click.Path(exists=True, dir_okay=False),
                        help="Read the cluster (nodes, pods, PDBs, PriorityClasses, ResourceQuotas) from "
                             "this kubeconfig's API server, read-only, instead of SNAPSHOT.")(func)
    return func


def load_source(snapshot: str | None, kubeconfig: str | None, context: str | None) -> Any:
    """The Scenario to start from: a file/directory, or a live cluster's snapshot."""
    from kubesched.api.loader import load_scenario, scenario_from_objects

    if kubeconfig is not None:
        if snapshot is not None:
            raise click.UsageError("give either SNAPSHOT or --kubeconfig, not both")
        try:
            from kubesched.cluster.kube.snapshot import read_snapshot
        except ImportError as err:
            raise click.UsageError("--kubeconfig needs the kube extra: pip install 'kubesched[kube]'") from err
        from kubesched.k8s.objects import ApiError

        try:
            objects = read_snapshot(kubeconfig, context)
        except ApiError as err:
            raise click.ClickException(f"reading the cluster failed: {err.code} {err.message}") from err
        return scenario_from_objects(objects, "live-cluster", f"cluster ({kubeconfig})")
    if snapshot is None:
        raise click.UsageError("give a SNAPSHOT file or directory, or --kubeconfig")
    return load_scenario(snapshot)
