"""The changes of a what-if run, as ``kubesched whatif``, the web app's what-if form and sweeps give
them (:class:`Changes`), the objects of ``--apply`` files, and the error for changes that do not fit
the snapshot. They are only data here: :mod:`.apply` checks them against a snapshot and applies them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.api.errors import KubeschedError, Location, ManifestError
from kubesched.api.loader import load_manifests
from kubesched.api.validation import SCHEDULER_CONFIGURATION_KIND
from kubesched.k8s.objects import Obj, key_of


@dataclass
class Changes:
    """The changes of a what-if run (all optional)."""

    preemption: bool | None = None  # the changed run with preemption on (True) or off (False)
    apply: list[Obj] = field(default_factory=list)  # objects to add or replace
    priority_classes: list[tuple[str, str]] = field(default_factory=list)  # (pod selector, class)
    cordon: list[str] = field(default_factory=list)
    drain: list[str] = field(default_factory=list)
    #: kubectl drain's flags for every --drain (force, ignoreDaemonSets, deleteEmptyDirData,
    #: gracePeriodSeconds, timeout), as a drain step takes them
    drain_options: dict[str, Any] = field(default_factory=dict)
    scheduler_configuration: Obj | None = None
    #: where it was read (a file's document), for error messages
    scheduler_configuration_source: Location | str | None = None

    def describe(self) -> list[str]:
        out = []
        if self.preemption is not None:
            out.append("enable preemption" if self.preemption else "disable preemption")
        out += [f"apply {o['kind']} {key_of(o)}" for o in self.apply]
        out += [f"re-prioritise {sel} to {pc}" for sel, pc in self.priority_classes]
        out += [f"cordon {n}" for n in self.cordon] + [f"drain {n}" for n in self.drain]
        if self.scheduler_configuration is not None:
            out.append("new scheduler configuration")
        return out


def drain_options(*, force: bool | None = None, ignore_daemonsets: bool | None = None,
                  delete_emptydir_data: bool | None = None, grace_period: int | None = None,
                  timeout: str | float | None = None) -> dict[str, Any]:
    """A drain step's flags from kubectl drain's: the flags set (a flag False or None is left out)
    and the grace period and timeout given, 0 included (``--grace-period 0``: the pods go at once,
    not after their own grace period)."""
    options: dict[str, Any] = {}
    for key, flag in (("force", force), ("ignoreDaemonSets", ignore_daemonsets),
                      ("deleteEmptyDirData", delete_emptydir_data)):
        if flag:
            options[key] = True
    if grace_period is not None:
        options["gracePeriodSeconds"] = grace_period
    if timeout is not None:
        options["timeout"] = timeout
    return options


class WhatIfError(KubeschedError):
    """A change that does not fit the snapshot (an unknown node or class, a selector matching nothing)."""


def load_change_objects(paths: list[str], warnings: list[ManifestError] | None = None) -> list[Obj]:
    """The objects of ``--apply`` files (Scenario documents left out); unknown fields are appended to
    ``warnings``. A KubeSchedulerConfiguration is refused: ``--scheduler-config`` is its place."""
    from pathlib import Path

    objects = []
    for obj, source in load_manifests([Path(p) for p in paths], warnings):
        if obj.get("kind") == SCHEDULER_CONFIGURATION_KIND:
            raise WhatIfError(f"{source}: --apply takes objects; give a {SCHEDULER_CONFIGURATION_KIND} "
                              "with --scheduler-config")
        if obj.get("kind") != "Scenario":
            objects.append(obj)
    return objects
