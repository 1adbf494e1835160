"""KubeSchedulerConfiguration (``kubescheduler.config.k8s.io/v1``) -> profiles of plugin instances.

Plugin lists are merged with the v1 defaults the way upstream does: the default plugins live in
``multiPoint``; user ``enabled`` entries replace a default of the same name in place or are appended;
``disabled`` entries (``*`` for all) remove defaults; then every multiPoint plugin is expanded to each
extension point it implements, after plugins explicitly configured for that point. The plugins and
the default list are in :mod:`kubesched.scheduler.plugins.registry`.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesched.api.durations import parse_duration
from kubesched.api.errors import KubeschedError
from kubesched.api.known_fields import unknown_configuration_fields
from kubesched.api.resources import is_extended_resource_name
from kubesched.k8s.objects import DEFAULT_SCHEDULER_NAME, Obj
from kubesched.scheduler.framework.extender import (
    Extender,
    ExtenderConfig,
    TLSSettings,
    decode_pem_data,
)
from kubesched.scheduler.framework.extender_transport import PYTHON_SCHEME, make_transport
from kubesched.scheduler.framework.extenders import ordered
from kubesched.scheduler.framework.interface import EXTENSION_POINTS, Handle, Plugin
from kubesched.scheduler.framework.profile import Profile
from kubesched.scheduler.plugins.registry import DEFAULT_MULTIPOINT, plugin_registry

API_VERSION = "kubescheduler.config.k8s.io/v1"


class ConfigError(KubeschedError):
    """An invalid KubeSchedulerConfiguration: ``message`` about the field at ``path`` (e.g.
    ``profiles[0].plugins.score``; empty when the message names its fields itself), so that whoever
    knows where the configuration came from can name the file, document and full field path
    (:meth:`kubesched.api.errors.Location.error`)."""

    def __init__(self, message: str, *, path: str = "") -> None:
        self.message = message
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


@dataclass
class SchedulerSettings:
    profiles: list[dict[str, Any]]
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    extenders: list[ExtenderConfig] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ignored_by_extenders(self) -> list[str]:
        """Extended resources an extender manages with ``ignoredByScheduler``: NodeResourcesFit
        leaves them alone in every profile (upstream ``buildExtenders``)."""
        return [name for ext in self.extenders for name, ignored in ext.managed_resources if ignored]


def _plugin_set(raw: Any, where: str) -> tuple[list[tuple[str, int]], list[str]]:
    if raw is None:
        return [], []
    if not isinstance(raw, dict):
        raise ConfigError("must be an object with enabled/disabled lists", path=where)
    enabled: list[tuple[str, int]] = []
    for i, entry in enumerate(raw.get("enabled") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ConfigError("required", path=f"{where}.enabled[{i}].name")
        weight = entry.get("weight", 0)
        if not isinstance(weight, int) or weight < 0:
            raise ConfigError("must be a non-negative integer", path=f"{where}.enabled[{i}].weight")
        enabled.append((entry["name"], weight))
    disabled: list[str] = []
    for i, entry in enumerate(raw.get("disabled") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ConfigError("required", path=f"{where}.disabled[{i}].name")
        disabled.append(entry["name"])
    return enabled, disabled


def _first_enabled(plugins_cfg: dict[str, Any], plugin: str, where: str) -> str:
    """The path of the first ``enabled`` entry that names ``plugin`` (``where`` if none does)."""
    for point in ("multiPoint", *EXTENSION_POINTS):
        for i, entry in enumerate((plugins_cfg.get(point) or {}).get("enabled") or []):
            if entry.get("name") == plugin:
                return f"{where}.{point}.enabled[{i}].name"
    return where


def _merge(defaults: list[tuple[str, int]], enabled: list[tuple[str, int]], disabled: list[str]) -> list[tuple[str, int]]:
    custom = {name: (i, (name, w)) for i, (name, w) in enumerate(enabled)}
    replaced: set[int] = set()
    merged: list[tuple[str, int]] = []
    if "*" not in disabled:
        for name, weight in defaults:
            if name in disabled:
                continue
            if name in custom:
                index, entry = custom[name]
                replaced.add(index)
                merged.append(entry)
            else:
                merged.append((name, weight))
    merged.extend(e for i, e in enumerate(enabled) if i not in replaced)
    return merged


def parse_configuration(config: dict[str, Any] | None) -> SchedulerSettings:
    """Validate the top level of a KubeSchedulerConfiguration and return its settings."""
    if config is None:
        return SchedulerSettings(profiles=[{"schedulerName": DEFAULT_SCHEDULER_NAME}])
    if not isinstance(config, dict):
        raise ConfigError("must be a KubeSchedulerConfiguration object")
    if config.get("kind", "KubeSchedulerConfiguration") != "KubeSchedulerConfiguration":
        raise ConfigError(f"expected KubeSchedulerConfiguration, got {config.get('kind')!r}", path="kind")
    version = config.get("apiVersion", API_VERSION)
    if version != API_VERSION:
        raise ConfigError(f"only {API_VERSION} is supported, got {version!r}", path="apiVersion")
    unknown = unknown_configuration_fields(config)
    if unknown:  # kube-scheduler decodes its configuration strictly
        raise ConfigError("; ".join(f"{path}: unknown field" for path in unknown))
    percentage = config.get("percentageOfNodesToScore", 0) or 0
    if not isinstance(percentage, int) or not 0 <= percentage <= 100:
        raise ConfigError("must be an integer in 0..100", path="percentageOfNodesToScore")
    initial = config.get("podInitialBackoffSeconds", 1)
    maximum = config.get("podMaxBackoffSeconds", 10)
    if not isinstance(initial, int) or initial <= 0:
        raise ConfigError("must be a positive integer", path="podInitialBackoffSeconds")
    if not isinstance(maximum, int) or maximum < initial:
        raise ConfigError("must be an integer >= podInitialBackoffSeconds", path="podMaxBackoffSeconds")
    profiles = config.get("profiles") or [{"schedulerName": DEFAULT_SCHEDULER_NAME}]
    if not isinstance(profiles, list):
        raise ConfigError("must be a list", path="profiles")
    seen: set[str] = set()
    for i, profile in enumerate(profiles):
        if not isinstance(profile, dict):
            raise ConfigError("must be an object", path=f"profiles[{i}]")
        name = profile.get("schedulerName", DEFAULT_SCHEDULER_NAME)
        if not isinstance(name, str) or not name:
            raise ConfigError("must be a non-empty string", path=f"profiles[{i}].schedulerName")
        if name in seen:
            raise ConfigError(f"duplicate profile {name!r}", path=f"profiles[{i}].schedulerName")
        seen.add(name)
    return SchedulerSettings(
        profiles=profiles,
        percentage_of_nodes_to_score=percentage,
        pod_initial_backoff_seconds=float(initial),
        pod_max_backoff_seconds=float(maximum),
        extenders=parse_extenders(config.get("extenders")),
    )


def build_extenders(configs: list[ExtenderConfig], config_dir: Path | None,
                    apply_binding: Callable[[Obj, str], None] | None) -> list[Extender]:
    """The extenders in calling order (ignorable ones last), each with its transport."""
    extenders: list[Extender] = []
    for i, config in enumerate(configs):
        try:
            transport = make_transport(config, config_dir)
        except (ValueError, ImportError, OSError, ssl.SSLError) as err:
            raise ConfigError(str(err), path=f"extenders[{i}].urlPrefix") from err
        extenders.append(Extender(config, transport, apply_binding))
    return ordered(extenders)


def _invalid(path: str, value: Any, message: str) -> str:
    """Upstream's ``field.Invalid`` text."""
    shown = f'"{value}"' if isinstance(value, str) else value
    return f"{path}: Invalid value: {shown}: {message}"


def parse_extenders(raw: Any) -> list[ExtenderConfig]:
    """KubeSchedulerConfiguration ``extenders``, validated as upstream's ``validateExtenders``
    (a positive weight with a prioritize verb, extended resource names, no resource managed twice,
    at most one binder), plus the types of the fields and a usable ``urlPrefix``."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ConfigError("must be a list", path="extenders")
    configs: list[ExtenderConfig] = []
    errors: list[str] = []
    managed_seen: set[str] = set()
    for i, entry in enumerate(raw):
        path = f"extenders[{i}]"
        if not isinstance(entry, dict):
            raise ConfigError("must be an object", path=path)

        def text(key: str, entry: dict[str, Any] = entry, path: str = path) -> str:
            value = entry.get(key) or ""
            if not isinstance(value, str):
                raise ConfigError("must be a string", path=f"{path}.{key}")
            return value

        def flag(key: str, entry: dict[str, Any] = entry, path: str = path) -> bool:
            value = entry.get(key, False)
            if not isinstance(value, bool):
                raise ConfigError("must be true or false", path=f"{path}.{key}")
            return value

        url = text("urlPrefix")
        if not url.startswith(("http://", "https://", PYTHON_SCHEME)):
            raise ConfigError(f"must be an http:// or https:// URL, or {PYTHON_SCHEME}<module or file.py>:<function>, "
                              f"got {url!r}", path=f"{path}.urlPrefix")
        weight = entry.get("weight", 0)
        if not isinstance(weight, int) or isinstance(weight, bool):
            raise ConfigError("must be an integer", path=f"{path}.weight")
        prioritize = text("prioritizeVerb")
        if prioritize and weight <= 0:
            errors.append(_invalid(f"{path}.weight", weight, "must have a positive weight applied to it"))
        timeout = 0.0
        if entry.get("httpTimeout") not in (None, ""):
            try:
                timeout = parse_duration(entry["httpTimeout"])
            except ValueError as err:
                raise ConfigError(str(err), path=f"{path}.httpTimeout") from err
        managed: list[tuple[str, bool]] = []
        for j, resource in enumerate(entry.get("managedResources") or []):
            rpath = f"{path}.managedResources[{j}].name"
            if not isinstance(resource, dict) or not isinstance(resource.get("name"), str):
                raise ConfigError("required", path=rpath)
            name = resource["name"]
            if not is_extended_resource_name(name):
                errors.append(_invalid(rpath, name, "is an invalid extended resource name"))
            if name in managed_seen:
                errors.append(_invalid(rpath, name, "duplicate extender managed resource name"))
            managed_seen.add(name)
            ignored = resource.get("ignoredByScheduler", False)
            if not isinstance(ignored, bool):
                raise ConfigError("must be true or false", path=f"{path}.managedResources[{j}].ignoredByScheduler")
            managed.append((name, ignored))
        configs.append(ExtenderConfig(
            url_prefix=url,
            filter_verb=text("filterVerb"),
            preempt_verb=text("preemptVerb"),
            prioritize_verb=prioritize,
            bind_verb=text("bindVerb"),
            weight=weight,
            enable_https=flag("enableHTTPS"),
            tls=_tls_settings(entry.get("tlsConfig"), f"{path}.tlsConfig"),
            http_timeout=timeout,
            node_cache_capable=flag("nodeCacheCapable"),
            managed_resources=tuple(managed),
            ignorable=flag("ignorable"),
        ))
    binders = sum(1 for c in configs if c.bind_verb)
    if binders > 1:
        errors.append(_invalid("extenders", f"found {binders} extenders implementing bind",
                               "only one extender can implement bind"))
    if errors:
        raise ConfigError("; ".join(errors))
    return configs


def _tls_settings(raw: Any, path: str) -> TLSSettings | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ConfigError("must be an object", path=path)
    values: dict[str, Any] = {"insecure": raw.get("insecure", False)}
    if not isinstance(values["insecure"], bool):
        raise ConfigError("must be true or false", path=f"{path}.insecure")
    for key, attr in (("serverName", "server_name"), ("certFile", "cert_file"), ("keyFile", "key_file"),
                      ("caFile", "ca_file")):
        if not isinstance(raw.get(key) or "", str):
            raise ConfigError("must be a string", path=f"{path}.{key}")
        values[attr] = raw.get(key) or ""
    for key, attr in (("certData", "cert_data"), ("keyData", "key_data"), ("caData", "ca_data")):
        try:
            values[attr] = decode_pem_data(raw.get(key))
        except ValueError as err:
            raise ConfigError(str(err), path=f"{path}.{key}") from err
    return TLSSettings(**values)


def build_profile(raw: dict[str, Any], index: int, handle_for: Callable[[str], Handle],
                  ignored_resources: list[str] | None = None) -> Profile:
    """Instantiate one profile's plugins (``handle_for(schedulerName)`` gives their Handle);
    ``ignored_resources`` (extended resources that extenders manage) replace NodeResourcesFit's
    ``ignoredResources``."""
    where = f"profiles[{index}]"
    name = raw.get("schedulerName", DEFAULT_SCHEDULER_NAME)
    plugins_cfg = raw.get("plugins") or {}
    if not isinstance(plugins_cfg, dict):
        raise ConfigError("must be an object", path=f"{where}.plugins")
    known_points = set(EXTENSION_POINTS) | {"multiPoint"}
    for key in plugins_cfg:
        if key not in known_points:
            raise ConfigError("unknown extension point", path=f"{where}.plugins.{key}")
    mp_enabled, mp_disabled = _plugin_set(plugins_cfg.get("multiPoint"), f"{where}.plugins.multiPoint")
    multipoint = _merge(DEFAULT_MULTIPOINT, mp_enabled, mp_disabled)

    args_by_plugin: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(raw.get("pluginConfig") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ConfigError("required", path=f"{where}.pluginConfig[{i}].name")
        if entry["name"] in args_by_plugin:
            raise ConfigError(f"repeated config for plugin {entry['name']!r}", path=f"{where}.pluginConfig[{i}]")
        args = entry.get("args") or {}
        if not isinstance(args, dict):
            raise ConfigError("must be an object", path=f"{where}.pluginConfig[{i}].args")
        args_by_plugin[entry["name"]] = args
    if ignored_resources:
        args_by_plugin["NodeResourcesFit"] = {
            **args_by_plugin.get("NodeResourcesFit", {}), "ignoredResources": list(ignored_resources)}

    registry = plugin_registry()
    specific = {p: _plugin_set(plugins_cfg.get(p), f"{where}.plugins.{p}") for p in EXTENSION_POINTS}
    needed = [n for n, _ in multipoint] + [n for en, _ in specific.values() for n, _ in en]
    instances: dict[str, Plugin] = {}
    handle = handle_for(name)
    for plugin_name in needed:
        if plugin_name in instances:
            continue
        cls = registry.get(plugin_name)
        if cls is None:
            raise ConfigError(f"plugin {plugin_name!r} is not registered (known: {', '.join(sorted(registry))})",
                              path=_first_enabled(plugins_cfg, plugin_name, f"{where}.plugins"))
        try:
            instances[plugin_name] = cls(args_by_plugin.get(plugin_name, {}), handle)
        except (ValueError, TypeError, KeyError) as err:
            raise ConfigError(str(err), path=f"{where}.pluginConfig[{plugin_name}].args") from err
    # Upstream decodes and validates the args of every in-tree plugin named in pluginConfig, but
    # NewFramework only instantiates the plugins some extension point needs: args for a disabled
    # plugin (or an unknown, out-of-tree name) are accepted and unused.
    for plugin_name, plugin_args in args_by_plugin.items():
        cls = registry.get(plugin_name)
        if plugin_name in instances or cls is None:
            continue
        try:
            cls(plugin_args, handle)
        except (ValueError, TypeError, KeyError) as err:
            raise ConfigError(str(err), path=f"{where}.pluginConfig[{plugin_name}].args") from err

    points: dict[str, list[str]] = {}
    for point, protocol in EXTENSION_POINTS.items():
        enabled, disabled = specific[point]
        chosen = [n for n, _ in enabled]
        for n in chosen:
            if not isinstance(instances[n], protocol):
                raise ConfigError(f"plugin {n!r} does not implement {point}", path=f"{where}.plugins.{point}")
        if "*" in disabled:
            points[point] = chosen
            continue
        # expandMultiPointPlugins: "part 1" = multiPoint plugins re-configured at this point, in the
        # order of this point's list; "part 2" = the other multiPoint plugins; "part 3" = the rest
        multipoint_names = {n for n, _ in multipoint}
        override = [n for n in chosen if n in multipoint_names and n not in disabled]
        from_multipoint = [
            n for n, _ in multipoint
            if n not in chosen and n not in disabled and isinstance(instances[n], protocol)
        ]
        ordered = override + from_multipoint + [n for n in chosen if n not in override]
        points[point] = ordered
    if len(points["queueSort"]) != 1:
        raise ConfigError("exactly one queue sort plugin must be enabled", path=f"{where}.plugins.queueSort")
    if not points["bind"]:
        raise ConfigError("at least one bind plugin is needed", path=f"{where}.plugins.bind")

    weights: dict[str, int] = {}
    for n, w in specific["score"][0] + multipoint:
        if n not in weights:
            weights[n] = w or 1
    percentage = raw.get("percentageOfNodesToScore")
    if percentage is not None and (not isinstance(percentage, int) or not 0 <= percentage <= 100):
        raise ConfigError("must be an integer in 0..100", path=f"{where}.percentageOfNodesToScore")
    return Profile(
        scheduler_name=name,
        plugins=instances,
        points=points,
        weights=weights,
        percentage_of_nodes_to_score=percentage,
    )
