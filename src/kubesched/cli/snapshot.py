"""``kubesched snapshot``: capture a live cluster, read-only, as a file for later what-ifs."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click
import yaml

from kubesched.api.errors import KubeschedError
from kubesched.cli.options import read_live_cluster


@click.command()
@click.option("--kubeconfig", required=True, type=click.Path(exists=True, dir_okay=False),
              help="The cluster to read (GET requests only).")
@click.option("--context", default=None, help="The kubeconfig context.")
@click.option("--output", "-o", "output", required=True, metavar="FILE",
              help="Where to write the snapshot (a YAML List, as `kubectl get -o yaml` writes); - for standard output.")
def snapshot(kubeconfig: str, context: str | None, output: str) -> None:
    """Capture the cluster of KUBECONFIG read-only: namespaces, PriorityClasses, nodes, quotas, PDBs,
    services, workloads and pods, with their uids, owners and status (Secrets and ConfigMaps are
    never read; environment variable values, managedFields and kubectl's last-applied annotation are
    left out). The file is a snapshot for `kubesched simulate`, `explain` and `whatif`."""
    target = None if output == "-" else Path(output)
    if target is not None and not target.parent.exists():
        raise click.UsageError(f"--output {output}: directory {target.parent} does not exist")
    try:
        read = read_live_cluster(kubeconfig, context)
    except ImportError as err:
        raise click.UsageError("snapshot needs the kube extra: pip install 'kubesched[kube]'") from err
    except KubeschedError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                           "items": read.objects}, sort_keys=False)
    if target is None:
        click.echo(text, nl=False)
        return
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)  # all or nothing: a reader never sees half a snapshot
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        click.echo(f"error: cannot write {output}: {err}", err=True)
        sys.exit(2)
    click.echo(f"wrote {len(read.objects)} objects to {output}", err=True)
