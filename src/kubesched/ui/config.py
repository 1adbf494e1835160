"""The scheduler configuration the run uses, as the ``/config`` page and ``/api/config`` show it, and
a new one read from the page's editor.

What is shown is what the run's scheduler was built with: the scenario's KubeSchedulerConfiguration,
or, without one, kube-scheduler v1.28's default profile (:mod:`kubesched.analysis.scheduler_profiles`
writes both out, each plugin's args with their defaults). It is worked out once per snapshot and kept
beside it (a snapshot never changes), as is the warning every page's header carries while pods ask
for a scheduler no profile provides.

A configuration typed in the editor is read as ``kubesched simulate --scheduler-config FILE`` reads
a file named ``scheduler-config.yaml`` (the same checks, the CLI's words), and a scheduler is built
from it at once, so that what the CLI's run would refuse (a plugin that is not registered, args a
plugin refuses) is refused before any job starts.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from typing import TYPE_CHECKING, Any

import yaml

from kubesched.analysis.scheduler_profiles import (
    configuration_view,
    editable_configuration,
    unserved_pods,
    unserved_warning,
)
from kubesched.api.errors import KubeschedError, Location
from kubesched.api.loader import Scenario
from kubesched.k8s.objects import Obj
from kubesched.sim import Simulation
from kubesched.ui.edits import SCHEDULER_CONFIG_FILE, EditError, read_scheduler_config_text

if TYPE_CHECKING:
    from kubesched.ui.state import Snapshot

#: where the run's configuration came from when the scenario has none
DEFAULT_SOURCE = "none given: kube-scheduler v1.28's default profile"

_views: weakref.WeakKeyDictionary[Snapshot, dict[str, Any]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def config_view(snap: Snapshot) -> dict[str, Any]:
    """``GET /api/config``: the configuration ``snap``'s run uses (see
    :func:`~kubesched.analysis.scheduler_profiles.configuration_view`), with ``source`` (where it
    was read, or that it is the default), ``yaml`` (the text to edit: the scenario's configuration as
    it is, or the default written out), ``unservedPods`` (by schedulerName: pods that ask for a
    scheduler no profile provides) and ``warning`` (that in words, or null)."""
    with _lock:
        found = _views.get(snap)
    if found is not None:
        return found
    config = snap.scenario.scheduler_configuration
    scheduler = snap.outcome.scheduler
    with snap.lock:  # the scheduler's state is read by diagnoses too: one reader at a time
        view = configuration_view(scheduler, config)
        unserved = unserved_pods(scheduler)
    view = {"source": source_text(snap.scenario), **view,
            "yaml": yaml.safe_dump(editable_configuration(view, config), sort_keys=False),
            "unservedPods": unserved,
            "warning": unserved_warning(unserved, [p["schedulerName"] for p in view["profiles"]])}
    with _lock:
        _views[snap] = view
    return view


def source_text(scenario: Scenario) -> str:
    """Where ``scenario``'s scheduler configuration was read, in words."""
    source = scenario.scheduler_configuration_source
    if scenario.scheduler_configuration is None:
        return DEFAULT_SOURCE
    if not isinstance(source, Location):
        return str(source or "the scenario")
    if source.file == SCHEDULER_CONFIG_FILE:
        return "the configuration editor of this page"
    parts = [source.file or "standard input"]
    if source.document is not None:
        parts.append(f"document {source.document}")
    if source.path:
        parts.append(source.path)
    return ", ".join(parts)


def unserved_of(snap: Snapshot) -> str | None:
    """The warning the pages' header carries while pods ask for a scheduler no profile provides."""
    return config_view(snap)["warning"]  # type: ignore[no-any-return]


def read_configuration(text: str, scenario: Scenario) -> tuple[Obj, Location]:
    """The KubeSchedulerConfiguration ``text``, read as ``--scheduler-config`` reads a file (EditError
    with the CLI's words, naming :data:`SCHEDULER_CONFIG_FILE`), and a scheduler built from it for
    ``scenario`` (EditError with the words the CLI's run would stop with: a plugin that is not
    registered, args a plugin refuses, an extender it cannot reach)."""
    if not text.strip():
        raise EditError(f"{SCHEDULER_CONFIG_FILE}: empty: paste a KubeSchedulerConfiguration")
    config, location = read_scheduler_config_text(text)
    try:
        Simulation(dataclasses.replace(scenario, objects=[], steps=[], sources=[], scheduler_configuration=config,
                                       scheduler_configuration_source=location))
    except KubeschedError as err:
        raise EditError(str(err)) from err
    return config, location


def configured(scenario: Scenario, text: str) -> Scenario:
    """``scenario`` with the configuration ``text`` in place of its own (EditError as
    :func:`read_configuration`); files its extenders name are found where the scenario's own
    configuration's were."""
    config, location = read_configuration(text, scenario)
    return dataclasses.replace(scenario, scheduler_configuration=config, scheduler_configuration_source=location)
