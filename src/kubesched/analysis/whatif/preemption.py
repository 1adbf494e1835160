"""Whether the baseline (the cluster as it is) preempts, and a scheduler configuration with
DefaultPreemption switched on or off.

"As it is" includes whether the cluster's scheduler preempts. A kubectl dump carries no scheduler
configuration, but kube-scheduler writes on every pod it cannot place a message that ends in
``preemption: ...`` whenever a PostFilter plugin (DefaultPreemption) ran (upstream
``framework/types.go FitError.Error``): the pending pods' messages tell (:func:`baseline_preemption`)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from kubesched.analysis.whatif.changes import Changes
from kubesched.api.errors import Location
from kubesched.api.loader import Scenario
from kubesched.api.snapshot import pod_state
from kubesched.k8s.objects import DEFAULT_SCHEDULER_NAME, Obj

PREEMPTION = "DefaultPreemption"
#: kubesched's preemption plugins that a configuration enables in DefaultPreemption's place
OPT_IN_PREEMPTION = ("AffinityAwarePreemption", "CrossNodePreemption", "PreemptionToleration",
                     "StrictPDBPreemption")


def _opt_in(plugins: dict[str, Any]) -> list[str]:
    """The opt-in preemption plugins a profile's ``plugins`` enable (multiPoint or postFilter)."""
    return [e.get("name") for point in ("multiPoint", "postFilter")
            for e in (plugins.get(point) or {}).get("enabled") or [] if e.get("name") in OPT_IN_PREEMPTION]


def preemption_plugin(config: Obj | None) -> str | None:
    """The preemption plugin of the first profile of ``config`` (None: the default profile):
    DefaultPreemption, an opt-in one enabled in its place, or None when it preempts not at all."""
    profiles = (config or {}).get("profiles") or [{}]
    plugins = profiles[0].get("plugins") or {}
    opt_in = _opt_in(plugins)
    if opt_in:
        return opt_in[0]
    for point in ("multiPoint", "postFilter"):
        if any(d.get("name") in (PREEMPTION, "*") for d in (plugins.get(point) or {}).get("disabled") or []):
            return None
    return PREEMPTION


def preemption_enabled(config: Obj | None) -> bool:
    """Whether the first profile of ``config`` (None: the default profile) preempts: DefaultPreemption
    runs, or one of kubesched's opt-in preemption plugins in its place."""
    return preemption_plugin(config) is not None


def with_preemption(config: Obj | None, enabled: bool) -> Obj:
    """A KubeSchedulerConfiguration with DefaultPreemption enabled or disabled in every profile.
    Disabling also takes out the opt-in preemption plugins enabled in its place; enabling leaves a
    profile that has one of them as it is."""
    cfg: dict[str, Any] = copy.deepcopy(config) if config else {
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    profiles = cfg.setdefault("profiles", [{"schedulerName": DEFAULT_SCHEDULER_NAME}])
    for profile in profiles:
        plugins = profile.setdefault("plugins", {})
        if _opt_in(plugins):
            if enabled:
                continue  # it preempts already, its own way
            for point in ("multiPoint", "postFilter"):
                if plugins.get(point) and plugins[point].get("enabled"):
                    plugins[point]["enabled"] = [e for e in plugins[point]["enabled"]
                                                 if e.get("name") not in OPT_IN_PREEMPTION]
        mp = plugins.setdefault("multiPoint", {})
        disabled = [d for d in mp.get("disabled") or [] if d.get("name") != PREEMPTION]
        if not enabled:
            disabled.append({"name": PREEMPTION})
        mp["disabled"] = disabled
        post = plugins.get("postFilter")
        if post and not enabled:
            post["enabled"] = [e for e in post.get("enabled") or [] if e.get("name") != PREEMPTION]
        if post and enabled:
            post["disabled"] = [d for d in post.get("disabled") or [] if d.get("name") != PREEMPTION]
    return cfg


#: what kube-scheduler puts before its PostFilter's part of an unschedulable pod's message
PREEMPTION_CLAUSE = " preemption: "


@dataclass(frozen=True)
class BaselinePreemption:
    """Whether the baseline preempts, what decided it (``snapshotConfiguration``, ``schedulerConfig``,
    ``pendingPodMessages`` or ``default``) and why, in words."""

    enabled: bool
    decided_by: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "decidedBy": self.decided_by, "reason": self.reason}


def _scheduler_message(pod: Obj) -> tuple[str | None, bool]:
    """A pending pod's ``PodScheduled`` message from kube-scheduler (None: none), and whether the
    scheduler nominated a node for it (which only a PostFilter does)."""
    status = pod.get("status") or {}
    message = next((c.get("message") for c in status.get("conditions") or []
                    if isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("status") == "False"
                    and c.get("reason") == "Unschedulable"), None)
    return (message or None), bool(status.get("nominatedNodeName"))


def preemption_in_messages(objects: list[Obj]) -> BaselinePreemption | None:
    """Whether the default scheduler of the cluster the objects were read from preempts, from its
    pending pods' messages: one with a ``preemption:`` clause (or a nominated node) says yes, pods with
    messages and none with a clause say no; no such pod: None (nothing to tell)."""
    told = preempting = 0
    for obj in objects:
        if obj.get("kind") != "Pod" or pod_state(obj) != "pending":
            continue
        if ((obj.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME) != DEFAULT_SCHEDULER_NAME:
            continue
        message, nominated = _scheduler_message(obj)
        if message is None and not nominated:
            continue
        told += 1
        preempting += nominated or PREEMPTION_CLAUSE in (message or "")
    if not told:
        return None
    clause = "kube-scheduler's 'preemption:' clause"
    if not preempting:
        whose = "the pending pod's message lacks" if told == 1 else f"none of the {told} pending pods' messages has"
        return BaselinePreemption(False, "pendingPodMessages",
                                  f"{whose} {clause}, which it adds whenever DefaultPreemption runs")
    whose = "the pending pod's message has" if told == 1 else f"{preempting} of the {told} pending pods' messages have"
    return BaselinePreemption(True, "pendingPodMessages", f"{whose} {clause} (or a nominated node): DefaultPreemption runs")


def baseline_preemption(base: Scenario, changes: Changes) -> BaselinePreemption:
    """Whether the baseline (the cluster as it is) preempts: as the snapshot's own scheduler
    configuration says; else, when the changes switch preemption, as ``--scheduler-config`` (the
    configuration being changed) says; else as the pending pods' messages tell; else as the default
    profile does (DefaultPreemption on)."""
    def runs(config: Obj | None) -> str:
        plugin = preemption_plugin(config)
        return f"runs {plugin}" if plugin is not None else "disables DefaultPreemption"

    if base.scheduler_configuration is not None:
        enabled = preemption_enabled(base.scheduler_configuration)
        return BaselinePreemption(enabled, "snapshotConfiguration",
                                  f"the snapshot's scheduler configuration {runs(base.scheduler_configuration)}")
    if changes.preemption is not None and changes.scheduler_configuration is not None:
        enabled = preemption_enabled(changes.scheduler_configuration)
        read_from = changes.scheduler_configuration_source
        source = f"--scheduler-config {read_from.file}" if isinstance(read_from, Location) else \
            read_from or "--scheduler-config"
        return BaselinePreemption(enabled, "schedulerConfig", f"{source} {runs(changes.scheduler_configuration)}")
    told = preemption_in_messages(base.objects)
    if told is not None:
        return told
    return BaselinePreemption(True, "default", "no pending pod carries kube-scheduler's message to tell; "
                                               "the default profile runs DefaultPreemption")
