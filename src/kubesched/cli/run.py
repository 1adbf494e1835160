"""``kubesched run``: schedule a real Kubernetes cluster.

Flags override the KubeSchedulerConfiguration's ``clientConnection`` and ``leaderElection``, which
override upstream's defaults (QPS 50, burst 100; leader election on, 15 s / 10 s / 2 s) except for
the Lease: kubesched's own, ``kube-system/kubesched``, since ``kube-system/kube-scheduler`` is the
default scheduler's (each scheduler of a cluster needs a lock of its own, as upstream's "Configure
Multiple Schedulers" task says). The kube backend (and the ``kubernetes`` client) is imported only when the
command runs, so the rest of the CLI does not pay for it.
"""

from __future__ import annotations

import signal
import socket
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kubesched.api.durations import parse_duration
from kubesched.cli.extras import require_extra
from kubesched.cli.options import read_scheduler_config
from kubesched.k8s.objects import DEFAULT_SCHEDULER_NAME, KUBE_SCHEDULER_LEASE_NAME, KUBESCHED_LEASE_NAME
from kubesched.scheduler.features import FeatureGateError, parse_feature_gates

if TYPE_CHECKING:
    from kubesched.api.errors import Location

DEFAULT_PORT = 10251


@dataclass
class RunSettings:
    config: dict[str, Any] | None
    kubeconfig: str | None
    qps: float
    burst: int
    leader_elect: bool
    lease_name: str
    lease_namespace: str
    lease_duration: float
    renew_deadline: float
    retry_period: float
    #: the configuration file's directory (``python:`` extender files are found from there)
    config_dir: str | None = None
    #: where the configuration was read (errors found when the scheduler is built name it)
    config_location: Location | None = None


def _duration(value: Any, default: float, where: str) -> float:
    if value is None:
        return default
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(f"{where}: {exc}", param_hint="--config") from exc


def resolve_settings(config: dict[str, Any] | None, kubeconfig: str | None, qps: float | None, burst: int | None,
                     leader_elect: bool | None, lease_name: str | None, lease_namespace: str | None) -> RunSettings:
    client = (config or {}).get("clientConnection") or {}
    election = (config or {}).get("leaderElection") or {}
    return RunSettings(
        config=config,
        kubeconfig=kubeconfig or client.get("kubeconfig") or None,
        qps=float(qps if qps is not None else client.get("qps", 50)),
        burst=int(burst if burst is not None else client.get("burst", 100)),
        leader_elect=bool(leader_elect if leader_elect is not None else election.get("leaderElect", True)),
        lease_name=lease_name or election.get("resourceName") or KUBESCHED_LEASE_NAME,
        lease_namespace=lease_namespace or election.get("resourceNamespace") or "kube-system",
        lease_duration=_duration(election.get("leaseDuration"), 15.0, "leaderElection.leaseDuration"),
        renew_deadline=_duration(election.get("renewDeadline"), 10.0, "leaderElection.renewDeadline"),
        retry_period=_duration(election.get("retryPeriod"), 2.0, "leaderElection.retryPeriod"),
    )


@click.command()
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False), default=None,
              help="kubeconfig file; default: clientConnection.kubeconfig, else in-cluster, else ~/.kube/config.")
@click.option("--context", default=None, help="kubeconfig context to use.")
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) YAML; its profiles' "
                   "schedulerNames are the pods kubesched schedules.")
@click.option("--kube-api-qps", type=float, default=None, help="Client QPS to the API server [default: 50].")
@click.option("--kube-api-burst", type=int, default=None, help="Client burst to the API server [default: 100].")
@click.option("--leader-elect/--no-leader-elect", default=None,
              help="Elect a leader on a Lease before scheduling [default: on].")
@click.option("--lease-name", "--leader-elect-resource-name", "lease_name", default=None,
              help=f"Lease name [default: leaderElection.resourceName, else {KUBESCHED_LEASE_NAME}]; not "
                   f"{KUBE_SCHEDULER_LEASE_NAME}, the default scheduler's, unless kubesched replaces it.")
@click.option("--lease-namespace", "--leader-elect-resource-namespace", "lease_namespace", default=None,
              help="Lease namespace [default: kube-system].")
@click.option("--bind-address", default="0.0.0.0", show_default=True, help="Address of /metrics, /healthz, /readyz.")
@click.option("--port", type=int, default=DEFAULT_PORT, show_default=True, help="Port of /metrics etc.; 0 disables.")
@click.option("--identity", default=None, help="Leader-election identity [default: hostname_uuid].")
@click.option("--seed", type=int, default=None, help="Seed of the tie-breaking random generator.")
@click.option("--log-format", type=click.Choice(["json", "klog", "text"]), default="json", show_default=True,
              help="json: one object per line; klog: kube-scheduler's text format (header, quoted message, "
                   "key=value pairs); text: plain lines.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info",
              show_default=True)
@click.option("--feature-gates", default="", metavar="NAME=BOOL,...",
              help="Behaviour of later Kubernetes releases to opt into, as kube-scheduler's flag: "
                   "SchedulerAsyncPreemption=true makes a preemptor's victims' API calls on a worker thread "
                   "while the next pods are scheduled (KEP-4832; off by default, as in v1.28).")
def run(kubeconfig: str | None, context: str | None, config_path: str | None, kube_api_qps: float | None,
        kube_api_burst: int | None, leader_elect: bool | None, lease_name: str | None, lease_namespace: str | None,
        bind_address: str, port: int, identity: str | None, seed: int | None, log_format: str,
        log_level: str, feature_gates: str) -> None:
    """Schedule the pods of a real cluster whose schedulerName names one of the profiles.

    Run it beside the default scheduler with a profile `schedulerName: kubesched` and a Lease of its
    own (see docs/real-cluster.md). SIGTERM stops it cleanly: the cycle in flight finishes, the Lease
    is released, exit code 0. Losing the Lease exits with code 1 (as kube-scheduler does).
    """
    require_extra("kubesched run", "kube")
    from kubesched.cluster.kube.logs import configure_logging
    from kubesched.serve.runner import STOPPED

    try:
        gates = parse_feature_gates(feature_gates)
    except FeatureGateError as exc:
        raise click.BadParameter(str(exc), param_hint="--feature-gates") from exc
    configure_logging(log_level, log_format)
    config, location = read_scheduler_config(config_path, "--config") if config_path is not None else (None, None)
    settings = resolve_settings(config, kubeconfig, kube_api_qps, kube_api_burst, leader_elect, lease_name,
                                lease_namespace)
    if config_path is not None:
        settings.config_dir = str(Path(config_path).parent)
        settings.config_location = location
    hostname = socket.gethostname()
    runner, server = _build(settings, context, identity or f"{hostname}_{uuid.uuid4()}", hostname, seed,
                            bind_address, port, gates)

    def stop(_signum: int, _frame: Any) -> None:
        runner.request_stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        reason = runner.run()
    finally:
        if server is not None:
            server.stop()
    sys.exit(0 if reason == STOPPED else 1)


def _build(settings: RunSettings, context: str | None, identity: str, hostname: str, seed: int | None,
           bind_address: str, port: int, feature_gates: dict[str, bool] | None = None) -> tuple[Any, Any]:
    import logging

    import numpy as np

    from kubesched.cluster.kube import (
        ClientOptions,
        KubeCluster,
        LeaderElectionConfig,
        LeaderElector,
        Transport,
        load_api_client,
        wall_clock,
    )
    from kubesched.scheduler.config import ConfigError
    from kubesched.scheduler.scheduler import Scheduler
    from kubesched.serve.runner import SchedulerRunner
    from kubesched.serve.serving import HealthServer

    log = logging.getLogger("kubesched.run")
    try:
        api_client = load_api_client(settings.kubeconfig, context)
    except Exception as exc:  # kubernetes.config.ConfigException and file errors
        raise click.ClickException(f"cannot configure the API client: {exc} (use --kubeconfig, or run in a "
                                   "pod with a service account)") from exc
    profiles = [str(p.get("schedulerName", DEFAULT_SCHEDULER_NAME)) for p in
                ((settings.config or {}).get("profiles") or [{"schedulerName": DEFAULT_SCHEDULER_NAME}])]
    options = ClientOptions(qps=settings.qps, burst=settings.burst)
    cluster = KubeCluster(api_client, profiles=profiles, identity=hostname, client_options=options)
    try:
        scheduler = Scheduler(cluster, settings.config, np.random.default_rng(seed), wall_clock,
                              config_dir=Path(settings.config_dir) if settings.config_dir else None,
                              feature_gates=feature_gates)
    except ConfigError as exc:
        where = settings.config_location
        raise click.BadParameter(str(where.error(exc.message, exc.path)) if where else str(exc),
                                 param_hint="--config") from exc
    elector = None
    if settings.leader_elect:
        if settings.lease_name == KUBE_SCHEDULER_LEASE_NAME and DEFAULT_SCHEDULER_NAME not in profiles:
            log.warning("the Lease kube-system/kube-scheduler belongs to the default scheduler; "
                        "a secondary scheduler should use its own (--lease-name)")
        timeout = max(1.0, settings.retry_period)
        transport = Transport(api_client, ClientOptions(qps=settings.qps, burst=settings.burst, max_attempts=1,
                                                        connect_timeout=timeout, request_timeout=timeout),
                              user_agent=f"kubesched/{hostname} leader-election")
        try:
            config = LeaderElectionConfig(identity=identity, lease_name=settings.lease_name,
                                          lease_namespace=settings.lease_namespace,
                                          lease_duration=settings.lease_duration,
                                          renew_deadline=settings.renew_deadline, retry_period=settings.retry_period)
            elector = LeaderElector(transport, config, wall_clock)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--config") from exc
    runner = SchedulerRunner(cluster, scheduler, elector)
    server = None
    if port:
        server = HealthServer(bind_address, port, metrics=lambda: runner.exporter.text, healthy=runner.healthy,
                              ready=runner.ready)
        server.start()
    log.info("starting", extra={"profiles": profiles, "qps": settings.qps, "burst": settings.burst,
                                "leaderElect": settings.leader_elect, "identity": identity,
                                "lease": f"{settings.lease_namespace}/{settings.lease_name}",
                                "metrics": f"{bind_address}:{port}" if port else None})
    return runner, server
