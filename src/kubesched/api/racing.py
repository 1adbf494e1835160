"""A Scenario's ``spec.schedulers``: several schedulers that race against the one embedded cluster
(docs/racing-schedulers.md).

Each entry is one scheduler process: its own KubeSchedulerConfiguration (inline, ``configuration``,
or a file, ``configurationFile``, found from the scenario file's directory), and its timing: how
late its informers hear of the cluster's changes (``informerDelay``) and how long a binding takes
between the scheduling decision and the API write (``bindDelay``). A pod goes to the scheduler one
of whose profiles has its ``schedulerName``, so no two schedulers may share one.

:func:`check_schedulers` checks the shape (with the rest of the Scenario, before anything is
loaded); :func:`load_schedulers` reads the configuration files and checks the schedulerNames.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesched.api.checks import (
    Errors,
    check_dns_label,
    check_duration,
    expect_dict,
    expect_list,
    expect_str,
    idx_path,
    key_path,
)
from kubesched.api.durations import parse_duration
from kubesched.api.errors import Location, ManifestError
from kubesched.k8s.objects import DEFAULT_SCHEDULER_NAME

#: the fields of one ``spec.schedulers`` entry
SCHEDULER_FIELDS = ("name", "configuration", "configurationFile", "informerDelay", "bindDelay")


@dataclass
class SchedulerSpec:
    """One racing scheduler of a scenario."""

    name: str
    #: its KubeSchedulerConfiguration (None: kube-scheduler's defaults)
    configuration: dict[str, Any] | None
    #: where the configuration was read (its errors, found when the scheduler is built, name it)
    source: Location
    #: the directory relative ``python:`` extender files are found from (None: the working directory)
    config_dir: str | None = None
    #: seconds between a change in the cluster and this scheduler's informers delivering it
    informer_delay: float = 0.0
    #: seconds between the end of a scheduling cycle and its binding's API write
    bind_delay: float = 0.0


def check_schedulers(value: Any, path: str, errs: Errors, check_configuration: Any) -> None:
    """The shape of ``spec.schedulers`` at ``path``; ``check_configuration(config, path, errs)``
    checks an inline KubeSchedulerConfiguration."""
    entries = expect_list(value, path, errs)
    if entries is None:
        return
    if not entries:
        errs.append((path, "must list at least one scheduler"))
    names: dict[str, int] = {}
    for i, entry in enumerate(entries):
        epath = idx_path(path, i)
        scheduler = expect_dict(entry, epath, errs)
        if scheduler is None:
            continue
        for extra in sorted(set(scheduler) - set(SCHEDULER_FIELDS), key=str):
            errs.append((key_path(epath, str(extra)),
                         f"unknown field in a scheduler (known: {', '.join(SCHEDULER_FIELDS)})"))
        name = expect_str(scheduler.get("name"), key_path(epath, "name"), errs, required=True, non_empty=True)
        if name:
            check_dns_label(name, key_path(epath, "name"), errs)
            if name in names:
                errs.append((key_path(epath, "name"), f'duplicate scheduler name "{name}" (also {path}[{names[name]}])'))
            names.setdefault(name, i)
        inline, file = scheduler.get("configuration"), scheduler.get("configurationFile")
        if inline is not None and file is not None:
            errs.append((epath, "give configuration or configurationFile, not both"))
        config = expect_dict(inline, key_path(epath, "configuration"), errs)
        if config is not None:
            check_configuration(config, key_path(epath, "configuration"), errs)
        expect_str(file, key_path(epath, "configurationFile"), errs, non_empty=True)
        for field in ("informerDelay", "bindDelay"):
            check_duration(scheduler.get(field), key_path(epath, field), errs)


def profile_names(configuration: dict[str, Any] | None) -> list[str]:
    """The schedulerNames a configuration's profiles serve, in order (kube-scheduler's default
    profile when it has none)."""
    profiles = (configuration or {}).get("profiles") or [{}]
    return [(p.get("schedulerName") if isinstance(p, dict) else None) or DEFAULT_SCHEDULER_NAME for p in profiles]


def load_schedulers(entries: list[dict[str, Any]], where: Location, directory: str | None,
                    read_configuration: Any) -> list[SchedulerSpec]:
    """The validated ``spec.schedulers`` read at ``where``: configuration files read by
    ``read_configuration(path) -> (config, Location)``, relative to ``directory`` (the scenario
    file's; None: the working directory). Raises ManifestError when two schedulers serve one
    schedulerName."""
    specs: list[SchedulerSpec] = []
    served: dict[str, str] = {}
    for i, entry in enumerate(entries):
        here = where.below(f"[{i}]")
        if entry.get("configurationFile") is not None:
            file = Path(entry["configurationFile"])
            if not file.is_absolute() and directory is not None:
                file = Path(directory) / file
            if not file.is_file():
                raise here.error(f"no such file: {file}", "configurationFile")
            config, source = read_configuration(str(file))
            config_dir: str | None = str(file.parent)
        else:
            config = copy.deepcopy(entry.get("configuration"))
            source, config_dir = here.below("configuration"), directory
        for j, scheduler_name in enumerate(profile_names(config)):
            other = served.get(scheduler_name)
            if other is not None:
                field = "" if config is None or not config.get("profiles") else f"profiles[{j}].schedulerName"
                raise source.error(f'schedulerName "{scheduler_name}" is served by scheduler "{other}" too: '
                                   "a pod could go to either; give each scheduler's profiles names of their own",
                                   field)
            served[scheduler_name] = entry["name"]
        specs.append(SchedulerSpec(
            name=entry["name"], configuration=config, source=source, config_dir=config_dir,
            informer_delay=parse_duration(entry.get("informerDelay") or 0),
            bind_delay=parse_duration(entry.get("bindDelay") or 0)))
    return specs


def refuse_with_configuration(where: Location, other: str) -> ManifestError:
    """The error of a scenario that has both ``spec.schedulers`` and another configuration."""
    return where.error(f"spec.schedulers configures each scheduler; {other} cannot be given too "
                       "(put it in a scheduler's configuration)")
