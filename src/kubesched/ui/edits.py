"""Editing the loaded scenario from the page: objects added or replaced as YAML (one or more
documents), or deleted by kind and name. An edit makes a new scenario and leaves the old one as
it was, so that an edit the loader or the simulation refuses changes nothing.

Pasted YAML is read as ``kubesched whatif --apply FILE`` reads its file (the same loader, the same
validation: an error names the document and the field), from a file named ``edit.yaml``; an object
replaces the one of the same kind, namespace and name, as ``--apply`` does.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from kubesched.analysis.whatif import BaselinePreemption, Changes, apply_changes, load_change_objects
from kubesched.api.errors import KubeschedError, ManifestError
from kubesched.api.loader import Scenario
from kubesched.k8s.objects import Obj, key_of

#: the most a page's edit may hold: a pasted object is a few kB, a whole dump belongs in a file
MAX_EDIT_BYTES = 2 * 1024 * 1024
#: the name errors give the pasted text
EDIT_FILE = "edit.yaml"
#: apply_changes asks whether the baseline preempts only to configure a scheduler for a cluster
#: without a configuration; an edit keeps the scenario's configuration as it is
_AS_IT_IS = BaselinePreemption(True, "default", "an edit keeps the scheduler configuration as it is")


class EditError(KubeschedError):
    """An edit refused: the loader's error, or what is wrong with the request."""


def read_objects(text: str) -> tuple[list[Obj], list[str]]:
    """The objects of ``text`` as ``--apply`` reads a file of it, and the warnings it prints (unknown
    fields)."""
    size = len(text.encode("utf-8"))
    if size > MAX_EDIT_BYTES:
        raise EditError(f"{EDIT_FILE}: {size / 1024 / 1024:.1f} MiB; an edit in the page takes at most "
                        f"{MAX_EDIT_BYTES // 1024 // 1024} MiB (load a file this big with kubesched ui FILE, or "
                        "apply it with kubesched whatif --apply FILE)")
    warnings: list[ManifestError] = []
    with tempfile.TemporaryDirectory(prefix="kubesched-ui-") as folder:
        path = Path(folder) / EDIT_FILE
        path.write_text(text, encoding="utf-8")
        try:
            objects = load_change_objects([str(path)], warnings)
        except KubeschedError as err:  # the file's name as the page calls it, not the temporary folder's
            raise EditError(str(err).replace(str(path), EDIT_FILE)) from err
    if not objects:
        raise EditError(f"{EDIT_FILE}: no object to add or replace")
    return objects, [f"warning: {w}".replace(str(path), EDIT_FILE) for w in warnings]


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
