"""``kubesched`` entry point."""

from __future__ import annotations

import logging
import os
import sys

import click

from kubesched import __version__
from kubesched.cli.explain import explain
from kubesched.cli.plan import plan
from kubesched.cli.replay import replay_cmd
from kubesched.cli.run import run
from kubesched.cli.simulate import simulate
from kubesched.cli.snapshot import snapshot
from kubesched.cli.sweep import sweep
from kubesched.cli.ui import ui
from kubesched.cli.whatif import whatif_cmd


def summary(help_text: str) -> str:
    """A command's one-line summary: the first sentence of its help, whole, without its asides in
    parentheses (what the help goes on to detail). The sentence ends at the first full stop that
    ends a sentence (not the dots of ``get ...``), or at a colon (what follows details it: a list)."""
    text = " ".join(help_text.split("\n\n", 1)[0].split())
    kept: list[str] = []
    depth = 0
    for i, char in enumerate(text):
        depth += char == "("
        if depth == 0:
            ends = i + 1 == len(text) or text[i + 1] == " "
            if char in ".:" and ends and text[i - 1:i] != ".":
                return " ".join("".join(kept).split()) + "."
            kept.append(char)
        depth -= char == ")" and depth > 0
    return " ".join("".join(kept).split())


class CommandGroup(click.Group):
    """Lists each command with its one-line summary in full (:func:`summary`), wrapped to the
    help's width; click's own listing cuts the help's start where the line ends ("...")."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, command.short_help or summary(command.help or ""))
                for name, command in sorted(self.commands.items()) if not command.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=CommandGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
cli.add_command(sweep)
cli.add_command(plan)
cli.add_command(replay_cmd, name="replay")
cli.add_command(ui)


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

