"""``kubesched`` entry point."""

from __future__ import annotations

import sys

import click

from kubesched import __version__
from kubesched.cli.explain import explain
from kubesched.cli.run import run
from kubesched.cli.simulate import simulate
from kubesched.cli.snapshot import snapshot
from kubesched.cli.whatif import whatif_cmd


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kubesched")
def cli() -> None:
    """kubesched: a Kubernetes scheduler with priority and preemption, and a cluster simulator.

    Start with `kubesched simulate examples/demo.yaml`.
    """


cli.add_command(simulate)
cli.add_command(explain)
cli.add_command(whatif_cmd, name="whatif")
cli.add_command(run)
cli.add_command(snapshot)


def main() -> None:
    try:
        cli(standalone_mode=True)
    except KeyboardInterrupt:
        sys.exit(130)

