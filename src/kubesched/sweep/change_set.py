"""A sweep's change set (``spec.changes.NAME``): what-if changes as ``kubesched whatif`` takes them,
each field checked for its type at load, so that a wrong one is refused naming it before any
variant runs (not taken for true because it is a non-empty string, nor failing every variant)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubesched.analysis.whatif.changes import Changes, drain_options, load_change_objects
from kubesched.api.checks import Errors, check_duration, expect_bool, expect_int
from kubesched.api.errors import ManifestError

CHANGE_FIELDS = ("drain", "cordon", "priorityClass", "apply", "enablePreemption", "disablePreemption", "force",
                 "ignoreDaemonSets", "deleteEmptyDirData", "gracePeriodSeconds", "drainTimeout")
_FLAGS = ("enablePreemption", "disablePreemption", "force", "ignoreDaemonSets", "deleteEmptyDirData")

#: told each error: the field's path in the file and the message
OnError = Callable[[str, str], None]


def parse_change_set(given: Any, path: str, here: Path, error: OnError) -> Changes | None:
    """The change set at ``path`` (files relative to ``here``), or None after telling ``error``
    that it is not a mapping. Other errors are told too, and what is right of it is returned."""
    given = {} if given is None else given
    if not isinstance(given, dict):
        error(path, "a mapping of what-if changes (drain, cordon, priorityClass, apply, enablePreemption, "
                    "disablePreemption and drain's flags)")
        return None
    for key in given:
        if key not in CHANGE_FIELDS:
            error(f"{path}.{key}", f"unknown field (fields: {', '.join(CHANGE_FIELDS)})")
    lists = {}
    for key in ("drain", "cordon", "priorityClass", "apply"):
        value = given.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            error(f"{path}.{key}", "a list of names")
            value = []
        lists[key] = value
    errs: Errors = []
    flags = {key: expect_bool(given.get(key), f"{path}.{key}", errs) for key in _FLAGS}
    grace = expect_int(given.get("gracePeriodSeconds"), f"{path}.gracePeriodSeconds", errs, minimum=0)
    timeout = given.get("drainTimeout")
    if check_duration(timeout, f"{path}.drainTimeout", errs) is None:
        timeout = None
    for where, message in errs:
        error(where, message)
    if flags["enablePreemption"] and flags["disablePreemption"]:
        error(path, "enablePreemption and disablePreemption exclude each other")
    preemption = True if flags["enablePreemption"] else False if flags["disablePreemption"] else None
    changes = Changes(preemption=preemption, cordon=lists["cordon"], drain=lists["drain"])
    for item in lists["priorityClass"]:
        selector, sep, pc = item.rpartition(":")
        if not sep or not selector or not pc:
            error(f"{path}.priorityClass", f"{item!r}: expected SELECTOR:CLASS")
        else:
            changes.priority_classes.append((selector, pc))
    try:
        changes.apply = load_change_objects([str(here / f) for f in lists["apply"]])
    except ManifestError as exc:
        error(f"{path}.apply", str(exc))
    options = drain_options(force=flags["force"], ignore_daemonsets=flags["ignoreDaemonSets"],
                            delete_emptydir_data=flags["deleteEmptyDirData"], grace_period=grace, timeout=timeout)
    if options and not changes.drain:
        error(path, "force, ignoreDaemonSets, deleteEmptyDirData, gracePeriodSeconds and drainTimeout go with drain")
    changes.drain_options = options
    return changes
