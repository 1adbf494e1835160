"""``kubesched snapshot``: capture a live cluster, read-only, as a file for later what-ifs.

The file is written page by page as the pages of the lists arrive (memory holds one page, not the
cluster), into a temporary file next to the output that replaces it only once everything has been
read: a reader never sees half a snapshot, and a failed read leaves the previous file as it was.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import click
import yaml

from kubesched.api.loader import JSON_LINES_SUFFIXES
from kubesched.cli.extras import require_extra

if TYPE_CHECKING:  # the kube backend is imported when the command runs
    from kubesched.cluster.kube.resources import Resource
    from kubesched.cluster.kube.snapshot import Page

FORMATS = ("yaml", "json", "jsonl")
#: the List's fields after ``items``, as kubectl writes them (keys sorted)
LIST_TAIL: dict[str, Any] = {"kind": "List", "metadata": {"resourceVersion": ""}}

#: libyaml's emitter when PyYAML has it (the objects come fresh from JSON: nothing is shared, so there
#: are no anchors or aliases to write)
_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def format_of(output: str, given: str | None) -> str:
    """``--format``, else from the output's suffix: .json → json, .jsonl/.ndjson → jsonl, else yaml."""
    if given is not None:
        return given
    suffix = "" if output == "-" else Path(output).suffix.lower()
    return "json" if suffix == ".json" else "jsonl" if suffix in JSON_LINES_SUFFIXES else "yaml"


class ListWriter:
    """Writes objects to ``out`` as they come, a page at a time, in one of :data:`FORMATS`: a ``v1 List``
    (yaml, json) whose text is what dumping the whole List at once would give, or one object per line
    (jsonl). ``start``, any number of ``page``, then ``finish``."""

    def __init__(self, out: TextIO, fmt: str) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r}")
        self.out = out
        self.fmt = fmt
        self.written = 0

    def _yaml(self, data: Any) -> str:
        return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False)  # type: ignore[no-any-return]

    def start(self) -> None:
        if self.fmt == "yaml":
            self.out.write(self._yaml({"apiVersion": "v1"}))
        elif self.fmt == "json":
            self.out.write('{\n    "apiVersion": "v1",\n    "items": [')

    def page(self, items: list[dict[str, Any]]) -> None:
        if not items:
            return
        if self.fmt == "yaml":
            # a block sequence at the left margin: what the emitter writes under ``items:`` in the whole List
            self.out.write(("" if self.written else "items:\n") + self._yaml(items))
        elif self.fmt == "json":
            parts: list[str] = []
            for item in items:
                text = json.dumps(item, indent=4).replace("\n", "\n        ")  # JSON strings hold no newline
                parts.append(("," if self.written or parts else "") + "\n        " + text)
            self.out.write("".join(parts))
        else:
            self.out.write("".join(json.dumps(item, separators=(",", ":")) + "\n" for item in items))
        self.written += len(items)
        self.out.flush()

    def finish(self) -> None:
        if self.fmt == "yaml":
            self.out.write(("" if self.written else "items: []\n") + self._yaml(LIST_TAIL))
        elif self.fmt == "json":
            tail = json.dumps(LIST_TAIL, indent=4)[1:-2]  # the fields, without the braces
            self.out.write(("\n    ]," if self.written else "],") + tail + "\n}\n")
        self.out.flush()


def write_pages(pages: Iterable[Page], out: TextIO, fmt: str,
                report: Callable[[Page], None] | None = None) -> Counter[Resource]:
    """Write the objects of ``pages`` to ``out`` as each page arrives (none is kept); the number of
    objects written, by resource."""
    writer = ListWriter(out, fmt)
    counts: Counter[Resource] = Counter()
    writer.start()
    for page in pages:
        writer.page(page.items)
        counts[page.resource] += len(page.items)
        if report is not None:
            report(page)
    writer.finish()
    return counts


def write_snapshot_file(pages: Iterable[Page], target: Path, fmt: str,
                        report: Callable[[Page], None] | None = None) -> Counter[Resource]:
    """:func:`write_pages` into a temporary file next to ``target`` that replaces ``target`` once all
    is written; on any failure the temporary file is removed, ``target`` is left as it was, and the
    error is raised."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            counts = write_pages(pages, f, fmt, report)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return counts


def _name(resource: Resource, count: int) -> str:
    return resource.kind.lower() if count == 1 else resource.plural


def summary(counts: Counter[Resource], where: str) -> str:
    """``wrote N objects (X pods, Y nodes, …) to WHERE``: the kinds by count, the largest first."""
    by_count = sorted(((r, c) for r, c in counts.items() if c), key=lambda rc: -rc[1])  # ties: read order
    kinds = ", ".join(f"{c:,} {_name(r, c)}" for r, c in by_count)
    total = sum(counts.values())
    return f"wrote {total:,} object{'' if total == 1 else 's'}" + (f" ({kinds})" if kinds else "") + f" to {where}"


class ProgressLine:
    """Counts on stderr as they grow. On a terminal, one line rewritten page by page that stays as the
    resource's count once it is read (a resource with no objects is written over by the next one);
    elsewhere, one line per resource once it is read, for those with objects. Warnings (403) between."""

    def __init__(self, tty: bool) -> None:
        self.tty = tty
        self.kept = 0  # objects of the current resource kept so far
        self.open = 0  # the width of the rewritten line on the terminal (0: none, the cursor is at a line start)

    def _line(self, page: Page) -> str:
        if not page.served:
            return f"{page.resource.plural}: not served"
        text = f"{page.resource.plural}: {page.read:,} read"
        if page.resource.kind == "Pod" and page.read > self.kept:
            text += f", {page.read - self.kept:,} finished left out"
        return text

    def __call__(self, page: Page) -> None:
        if page.warning is not None:
            self.end(keep=False)
            click.echo(f"warning: {page.warning}", err=True)
            return
        self.kept += len(page.items)
        stays = page.done and page.read > 0
        if self.tty:
            line = self._line(page)
            click.echo("\r" + line.ljust(self.open), err=True, nl=stays)  # spaces over a longer line before
            self.open = 0 if stays else len(line)
        elif stays:
            click.echo(self._line(page), err=True)
        if page.done:
            self.kept = 0

    def end(self, keep: bool) -> None:
        """Finish the rewritten line: ``keep`` it (the count where a failure stopped), or erase it."""
        if self.open:
            click.echo("" if keep else "\r" + " " * self.open + "\r", err=True, nl=keep)
            self.open = 0


def _fail(progress: ProgressLine, message: str) -> NoReturn:
    progress.end(keep=True)
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


@click.command()
@click.option("--kubeconfig", required=True, type=click.Path(exists=True, dir_okay=False),
              help="The cluster to read (GET requests only).")
@click.option("--context", default=None, help="The kubeconfig context.")
@click.option("--output", "-o", "output", required=True, metavar="FILE",
              help="Where to write the snapshot; - for standard output. The file is replaced only once the "
                   "whole cluster has been read (on failure it is left as it was).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="yaml: a v1 List as `kubectl get -o yaml` writes it; json: the same List as `kubectl get -o "
                   "json` writes it; jsonl: one object per line, no List (read back as fast as json, and "
                   "by line-oriented tools). Default: from FILE's suffix (.json: json, .jsonl or "
                   ".ndjson: jsonl, else yaml; yaml for -).")
@click.option("--page-size", type=click.IntRange(min=1), default=500, hidden=True,
              help="Objects per list request (limit).")
def snapshot(kubeconfig: str, context: str | None, output: str, fmt: str | None, page_size: int) -> None:
    """Capture the cluster of KUBECONFIG read-only: namespaces, PriorityClasses, nodes, quotas, PDBs,
    services, workloads and pods, with their uids, owners and status (Secrets and ConfigMaps are
    never read; environment variable values, managedFields and kubectl's last-applied annotation are
    left out; finished pods too). The file is a snapshot for `kubesched simulate`, `explain` and `whatif`.

    The lists are read 500 objects at a time and each page is written as it arrives, so memory holds
    a page, not the cluster. Counts go to stderr as they grow."""
    target = None if output == "-" else Path(output)
    if target is not None and not target.parent.exists():
        raise click.UsageError(f"--output {output}: directory {target.parent} does not exist")
    fmt = format_of(output, fmt)
    progress = ProgressLine(sys.stderr.isatty())
    require_extra("kubesched snapshot", "kube", ("kubernetes",))
    from kubesched.cluster.kube.snapshot import iter_snapshot, snapshot_transport
    from kubesched.k8s.objects import ApiError

    try:
        transport = snapshot_transport(kubeconfig, context)
    except Exception as err:  # the kubeconfig: unreadable, no such context, bad credentials file
        _fail(progress, f"cannot use {kubeconfig}: {err}")
    pages = iter_snapshot(transport, page_size)
    try:
        if target is None:
            counts = write_pages(pages, sys.stdout, fmt, progress)
        else:
            counts = write_snapshot_file(pages, target, fmt, progress)
    except ApiError as err:
        incomplete = "; the output is incomplete" if target is None else f"; {output} not written"
        _fail(progress, f"reading the cluster failed: {err.code} {err.message}{incomplete}")
    except OSError as err:
        _fail(progress, f"cannot write {output}: {err}")
    progress.end(keep=False)
    click.echo(summary(counts, "standard output" if target is None else output), err=True)
