"""Editing the loaded scenario from the page: objects added or replaced as YAML (one or more
documents), or deleted by kind and name. An edit makes a new scenario and leaves the old one as
it was, so that an edit the loader or the simulation refuses changes nothing.

Pasted YAML is read as ``kubesched whatif --apply FILE`` reads its file (the same loader, the same
validation: an error names the document and the field), from a file named ``edit.yaml``; an object
replaces the one of the same kind, namespace and name, as ``--apply`` does. The what-if form's
``--apply`` and ``--scheduler-config`` texts are read the same way, as files of their own names.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from kubesched.analysis.scheduler_config import SchedulerConfigError, read_checked_scheduler_config
from kubesched.analysis.whatif.apply import apply_changes
from kubesched.analysis.whatif.changes import Changes, load_change_objects
from kubesched.analysis.whatif.preemption import BaselinePreemption
from kubesched.api.errors import KubeschedError, Location, ManifestError
from kubesched.api.loader import Scenario
from kubesched.k8s.objects import Obj, key_of

#: the most a page's edit may hold: a pasted object is a few kB, a whole dump belongs in a file
MAX_EDIT_BYTES = 2 * 1024 * 1024
#: the names errors give the pasted texts: an edit, and the what-if form's --apply and --scheduler-config
EDIT_FILE = "edit.yaml"
APPLY_FILE = "apply.yaml"
SCHEDULER_CONFIG_FILE = "scheduler-config.yaml"
#: apply_changes asks whether the baseline preempts only to configure a scheduler for a cluster
#: without a configuration; an edit keeps the scenario's configuration as it is
_AS_IT_IS = BaselinePreemption(True, "default", "an edit keeps the scheduler configuration as it is")


class EditError(KubeschedError):
    """An edit, or a text of the what-if form, refused: the loader's error (the CLI's), or what is
    wrong with the request."""


class StaleVersion(EditError):
    """An edit based on an earlier version of the scenario than the one there is now: refused (HTTP
    409) rather than overwriting what another tab or client changed since."""

    def __init__(self, based_on: int, now: int) -> None:
        super().__init__(f"the scenario is at version {now}, and this edit was made on version {based_on}: another tab "
                         f"or client changed it since. Nothing was changed; reload to see the scenario as it is now "
                         f"(or send the edit again, based on version {now}, to overwrite those changes)")


def http_status(err: KubeschedError) -> int:
    """The HTTP status of a refused edit: 409 for a stale one, 400 for the rest."""
    return 409 if isinstance(err, StaleVersion) else 400


def form_version(value: str | None) -> int:
    """The version of the scenario a form was rendered from (its ``version`` field)."""
    if value is None or not value.strip().isdigit():
        raise EditError("the form does not say which version of the scenario it was made on: reload the page "
                        "and edit there")
    return int(value)


def api_version(field: int | None, if_match: str | None) -> int | None:
    """The version an API edit is based on: its ``version`` field or its ``If-Match`` header (``3``,
    ``"3"``; ``*``: any), None when it names none (then it applies to whatever version there is)."""
    if if_match is None or if_match.strip() == "*":
        return field
    value = if_match.strip().removeprefix("W/").strip('"')
    if not value.isdigit():
        raise EditError(f"If-Match {if_match[:40]!r}: expected the scenario's version, a number (as the "
                        "Kubesched-Scenario-Version header of every answer gives it)")
    if field is not None and field != int(value):
        raise EditError(f"the edit names version {field} and If-Match {value}: name one")
    return int(value)


def read_objects(text: str) -> tuple[list[Obj], list[str]]:
    """The objects of ``text`` as ``--apply`` reads a file of it, and the warnings it prints (unknown
    fields); EditError when there is none."""
    objects, warnings = read_apply_text(text, EDIT_FILE)
    if not objects:
        raise EditError(f"{EDIT_FILE}: no object to add or replace")
    return objects, warnings


def read_apply_text(text: str, name: str) -> tuple[list[Obj], list[str]]:
    """The objects of ``text`` read as ``kubesched whatif --apply`` reads a file of it named ``name``
    (none for a text without any, as for an empty file), and the warnings it prints."""
    warnings: list[ManifestError] = []
    with as_file(text, name) as path:
        try:
            objects = load_change_objects([str(path)], warnings)
        except KubeschedError as err:  # the file's name as the page calls it, not the temporary folder's
            raise EditError(str(err).replace(str(path), name)) from err
    return objects, [f"warning: {w}".replace(str(path), name) for w in warnings]


def read_scheduler_config_text(text: str) -> tuple[Obj, Location]:
    """A KubeSchedulerConfiguration read as ``kubesched whatif --scheduler-config`` reads a file of
    it named :data:`SCHEDULER_CONFIG_FILE` (the same checks), and where it was read; EditError with
    the words the CLI says of such a file."""
    with as_file(text, SCHEDULER_CONFIG_FILE) as path:
        try:
            config, location = read_checked_scheduler_config(str(path))
        except SchedulerConfigError as err:  # worded as the CLI words its option's error
            said = click.BadParameter(str(err), param_hint="--scheduler-config").format_message()
            raise EditError(said.replace(str(path), SCHEDULER_CONFIG_FILE)) from err
    return config, dataclasses.replace(location, file=SCHEDULER_CONFIG_FILE)


@contextmanager
def as_file(text: str, name: str) -> Iterator[Path]:
    """``text`` pasted in the page as a file named ``name`` in a folder of its own (gone afterwards),
    for the CLI's readers; EditError for more than :data:`MAX_EDIT_BYTES`."""
    size = len(text.encode("utf-8"))
    if size > MAX_EDIT_BYTES:
        raise EditError(f"{name}: {size / 1024 / 1024:.1f} MiB; text pasted in the page takes at most "
                        f"{MAX_EDIT_BYTES // 1024 // 1024} MiB (load a file this big with kubesched ui FILE, or "
                        "give it to kubesched whatif)")
    with tempfile.TemporaryDirectory(prefix="kubesched-ui-") as folder:
        path = Path(folder) / name
        path.write_text(text, encoding="utf-8")
        yield path


def with_objects(scenario: Scenario, objects: list[Obj]) -> Scenario:
    """The scenario with ``objects`` added, or in place of those of the same kind, namespace and name."""
    _, changed = apply_changes(scenario, Changes(apply=objects), _AS_IT_IS)
    return changed


def without_object(scenario: Scenario, kind: str, namespace: str, name: str) -> Scenario:
    """The scenario without the object ``kind`` ``namespace/name`` (namespace empty for a
    cluster-scoped kind); EditError naming what there is of that kind when it has none such."""
    wanted = f"{namespace}/{name}" if namespace else name
    kept = [o for o in scenario.objects if not (o["kind"] == kind and key_of(o) == wanted)]
    if len(kept) == len(scenario.objects):
        names = sorted(key_of(o) for o in scenario.objects if o["kind"] == kind)
        known = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
        raise EditError(f"no {kind} {wanted} in the scenario ({kind} objects: {known or 'none'})")
    return dataclasses.replace(scenario, objects=kept)


def object_keys(scenario: Scenario) -> list[dict[str, Any]]:
    """Each object's kind, namespace and name, in the scenario's order."""
    return [{"kind": o["kind"], "namespace": (o.get("metadata") or {}).get("namespace") or "",
             "name": (o.get("metadata") or {}).get("name") or ""} for o in scenario.objects]
