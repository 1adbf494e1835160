"""``kubesched`` entry point."""

from __future__ import annotations

import logging
import os
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
        _leave(130)
    except SystemExit as done:
        code = done.code
        _leave(code if isinstance(code, int) else 0 if code is None else 1)
    _leave(0)


def _leave(code: int) -> None:
    """End the process once its output is out, without freeing every object one by one first: the
    interpreter's teardown of a simulated 150 000-pod cluster takes longer than reading it (20 s).
    What a normal exit would still do for us is done here: streams flushed, logging shut down."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 1  # e.g. standard output closed by a pager
    os._exit(code)

