"""The JSON API's request bodies, which the pages' forms fill in too: objects to edit, and the
changes of a what-if as ``kubesched whatif`` takes them (made into :class:`Changes` as the CLI makes
them of its options, with its checks and its words)."""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import Query
from pydantic import BaseModel, Field, PrivateAttr

from kubesched.analysis.whatif.changes import Changes, WhatIfError, drain_options
from kubesched.api.durations import parse_duration
from kubesched.ui.edits import APPLY_FILE, SCHEDULER_CONFIG_FILE, read_apply_text, read_scheduler_config_text
from kubesched.ui.podlinks import MAX_IDENTITY

#: the longest name a Kubernetes object may have (a DNS subdomain)
MAX_NAME = 253
#: a pod document's ``?id=``: the pod's identity, found as the pod's page finds it
API_ID = Query(None, alias="id", max_length=MAX_IDENTITY,
               description="the pod's identity (as the result's pods give it): when the name is not that pod's in "
                           "this run, the answer is a 307 to the same document of the run's pod of that identity "
                           "(with was= and was_in= saying what the name was), as the pod's page redirects")


class EditRequest(BaseModel):
    """Objects to add or replace."""

    yaml: str = Field(description="one or more YAML (or JSON) documents, as a file for kubesched whatif --apply")
    version: int | None = Field(default=None, description="the scenario's version the edit is based on (as If-Match)")


class WhatIfRequest(BaseModel):
    """The changes of a what-if, as ``kubesched whatif`` takes them."""

    drain: list[str] = Field(default_factory=list, description="nodes to drain at t=0, as kubectl drain")
    cordon: list[str] = Field(default_factory=list, description="nodes to cordon")
    ignoreDaemonSets: bool = False  # noqa: N815 - the JSON field's name
    force: bool = False
    deleteEmptyDirData: bool = False  # noqa: N815
    gracePeriodSeconds: int | None = Field(default=None, ge=0,  # noqa: N815
                                           description="with drain: seconds each pod gets to terminate (default: "
                                                       "its own; 0: at once), as whatif --grace-period")
    drainTimeout: str | None = Field(default=None,  # noqa: N815
                                     description="with drain: give up after this long (a duration: 90s, 5m; "
                                                 "default: wait for ever), as whatif --drain-timeout")
    preemption: bool | None = Field(default=None, description="true: enable preemption; false: disable it")
    priorityClass: list[str] = Field(default_factory=list,  # noqa: N815
                                     description="SELECTOR:CLASS, as whatif --priority-class")
    apply: str = Field(default="", description=f"objects to add or replace: YAML or JSON documents, read as "
                                               f"whatif --apply reads a file (named {APPLY_FILE} in errors)")
    schedulerConfig: str = Field(default="",  # noqa: N815
                                 description="a KubeSchedulerConfiguration for the changed run, read as whatif "
                                             f"--scheduler-config reads a file (named {SCHEDULER_CONFIG_FILE} "
                                             "in errors)")
    #: what the form sent that is not a value of its field (said when the changes are made)
    _form_errors: list[str] = PrivateAttr(default_factory=list)

    @classmethod
    def from_form(cls, body: bytes) -> WhatIfRequest:
        """The changes the what-if page's form posts (``application/x-www-form-urlencoded``): names
        comma-separated, a checkbox there when ticked, preemption "", "true" or "false"."""
        fields = parse_qs(body.decode("utf-8", "replace"))

        def names(key: str) -> list[str]:
            return [name.strip() for value in fields.get(key, ()) for name in value.split(",") if name.strip()]

        def text(key: str) -> str:
            return (fields.get(key) or [""])[0]

        preemption, grace = text("preemption"), text("gracePeriodSeconds").strip()
        asked = cls(drain=names("drain"), cordon=names("cordon"), priorityClass=names("priorityClass"),
                    ignoreDaemonSets="ignoreDaemonSets" in fields, force="force" in fields,
                    deleteEmptyDirData="deleteEmptyDirData" in fields,
                    gracePeriodSeconds=int(grace) if grace.isdigit() else None,
                    drainTimeout=text("drainTimeout").strip() or None,
                    preemption=None if preemption == "" else preemption == "true",
                    apply=text("apply"), schedulerConfig=text("schedulerConfig"))
        if grace and not grace.isdigit():
            asked._form_errors.append(f"gracePeriodSeconds {grace[:40]!r}: expected a whole number of seconds, 0 or "
                                      "more (as whatif --grace-period)")
        return asked

    def changes(self, warnings: list[str] | None = None) -> Changes:
        """The changes, as ``kubesched whatif`` makes them of its options (``warnings``: where the
        warnings it would print go, such as unknown fields of the objects applied)."""
        if self._form_errors:
            raise WhatIfError(self._form_errors[0])
        # the drain's flags as the CLI makes them of its options: a grace period of 0 is kept (the pods
        # go at once), not taken for "not given"
        options = drain_options(force=self.force, ignore_daemonsets=self.ignoreDaemonSets,
                                delete_emptydir_data=self.deleteEmptyDirData, grace_period=self.gracePeriodSeconds,
                                timeout=self._timeout())
        if not self.drain and options:
            raise WhatIfError("force, ignoreDaemonSets, deleteEmptyDirData, gracePeriodSeconds and drainTimeout go "
                              "with drain")
        for option, names in (("--drain", self.drain), ("--cordon", self.cordon)):
            for name in names:  # refused before the cluster is looked at, and not echoed whole
                if len(name) > MAX_NAME:
                    raise WhatIfError(f"{option} {name[:40]}…: not a node name ({len(name):,} characters; "
                                      f"a Kubernetes object's name has at most {MAX_NAME})")
        changes = Changes(preemption=self.preemption, cordon=list(self.cordon), drain=list(self.drain),
                          drain_options=options)
        for item in self.priorityClass:
            if len(item) > 2 * MAX_NAME + 1000:  # a selector and a class name, with room to spare
                raise WhatIfError(f"priorityClass {item[:40]}…: too long for SELECTOR:CLASS ({len(item):,} characters)")
            selector, sep, pc = item.rpartition(":")
            if not sep or not selector or not pc:
                raise WhatIfError(f"priorityClass {item!r}: expected SELECTOR:CLASS")
            changes.priority_classes.append((selector, pc))
        if self.apply.strip():
            changes.apply, said = read_apply_text(self.apply, APPLY_FILE)
            if warnings is not None:
                warnings.extend(said)
        if self.schedulerConfig.strip():
            changes.scheduler_configuration, changes.scheduler_configuration_source = read_scheduler_config_text(
                self.schedulerConfig)
        return changes

    def _timeout(self) -> str | None:
        """The drain's timeout as the CLI passes its --drain-timeout (seconds, ``90s``), or None."""
        given = (self.drainTimeout or "").strip()
        if not given:
            return None
        try:
            seconds = parse_duration(given[:40])
        except ValueError as err:
            raise WhatIfError(f"drainTimeout: {err}") from err
        if len(given) > 40 or seconds < 0:
            raise WhatIfError(f"drainTimeout {given[:40]!r}: expected a duration of 0 or more (90s, 5m, 1h30m)")
        return f"{seconds:g}s"
