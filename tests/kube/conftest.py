"""Fixtures for the kube backend: a fake API server, and kubesched replicas running against it in
threads with short timings (retries, backoffs and leases in fractions of a second)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("kubernetes")  # the kube extra
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fakeapi import FakeApiServer  # noqa: E402

from kubesched.cluster.kube import (  # noqa: E402
    ClientOptions,
    InformerOptions,
    KubeCluster,
    LeaderElectionConfig,
    LeaderElector,
    Transport,
    load_api_client,
    wall_clock,
)
from kubesched.scheduler.scheduler import Scheduler  # noqa: E402
from kubesched.serve.runner import RunnerOptions, SchedulerRunner  # noqa: E402
from kubesched.testkit.builders import make_pod  # noqa: E402

SCHEDULER = "kubesched"
CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
          "profiles": [{"schedulerName": SCHEDULER}]}
FAST_CLIENT = ClientOptions(qps=0, burst=1, max_attempts=3, retry_initial=0.05, retry_cap=0.2,
                            request_timeout=5.0)
FAST_INFORMER = InformerOptions(page_size=7, watch_timeout_min=30, backoff_initial=0.05, backoff_cap=0.3)
FAST_RUNNER = RunnerOptions(idle_wait=0.05, metrics_period=0.1, sync_timeout=10.0)
FAST_LEASE = {"lease_duration": 1.6, "renew_deadline": 1.0, "retry_period": 0.2}


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.02, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        time.sleep(interval)


def pod(name: str, cpu: str | None = "100m", *, scheduler_name: str = SCHEDULER, **fields: Any) -> dict[str, Any]:
    """A pod for kubesched (``schedulerName``) requesting ``cpu`` only."""
    return make_pod(name, cpu, None, scheduler_name=scheduler_name, **fields)


def node_of(fake: FakeApiServer, name: str, namespace: str = "default") -> str | None:
    obj = fake.get("Pod", namespace, name)
    return None if obj is None else (obj.get("spec") or {}).get("nodeName")


class Replica:
    """One kubesched replica (KubeCluster + Scheduler + runner, optionally a LeaderElector) on a thread."""

    def __init__(self, fake: FakeApiServer, kubeconfig: str, identity: str = "a", *,
                 leader_election: bool = False, config: dict[str, Any] | None = None,
                 client: ClientOptions = FAST_CLIENT, informer: InformerOptions = FAST_INFORMER,
                 runner: RunnerOptions = FAST_RUNNER, lease: dict[str, Any] | None = None,
                 feature_gates: dict[str, bool] | None = None) -> None:
        self.identity = identity
        api_client = load_api_client(kubeconfig)
        self.cluster = KubeCluster(api_client, profiles=[SCHEDULER], identity=identity, client_options=client,
                                   informer_options=informer)
        self.scheduler = Scheduler(self.cluster, config or CONFIG, np.random.default_rng(0), wall_clock,
                                   feature_gates=feature_gates)
        self.elector: LeaderElector | None = None
        if leader_election:
            le_transport = Transport(api_client, ClientOptions(qps=0, max_attempts=1, request_timeout=0.5),
                                     user_agent=f"kubesched/{identity} leader-election")
            self.elector = LeaderElector(le_transport, LeaderElectionConfig(identity=identity, **(lease or FAST_LEASE)),
                                         wall_clock)
        self.runner = SchedulerRunner(self.cluster, self.scheduler, self.elector, runner)
        self.result: str | None = None
        self.thread = threading.Thread(target=self._run, name=f"replica-{identity}", daemon=True)

    def _run(self) -> None:
        self.result = self.runner.run()

    def start(self, wait_ready: bool = True) -> Replica:
        self.thread.start()
        if wait_ready:
            wait_for(self.runner.ready, what=f"replica {self.identity} ready")
        return self

    def stop(self, timeout: float = 10.0) -> str | None:
        self.runner.request_stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"replica {self.identity} did not stop"
        return self.result

    def sample(self, name: str, **labels: str) -> float | None:
        """The value of one sample of the exposition (None when absent)."""
        return metric_sample(self.runner.exporter.text, name, **labels)

    def metric(self, name: str) -> str:
        return "\n".join(line for line in self.runner.exporter.text.splitlines() if line.startswith(name))

    def pending(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for line in self.runner.exporter.text.splitlines():
            if line.startswith("scheduler_pending_pods{"):
                queue = line.split('"')[1]
                counts[queue] = int(float(line.rsplit(" ", 1)[1]))
        return counts


def metric_sample(text: str, name: str, **labels: str) -> float | None:
    """The value of the sample ``name`` with exactly ``labels`` in a Prometheus text exposition."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return None


@pytest.fixture
def fake() -> Iterator[FakeApiServer]:
    server = FakeApiServer().start()
    yield server
    server.stop()


@pytest.fixture
def kubeconfig(fake: FakeApiServer, tmp_path: Path) -> str:
    return fake.kubeconfig(tmp_path)


@pytest.fixture
def replicas(fake: FakeApiServer, kubeconfig: str) -> Iterator[Callable[..., Replica]]:
    started: list[Replica] = []

    def make(identity: str = "a", start: bool = True, **kwargs: Any) -> Replica:
        replica = Replica(fake, kubeconfig, identity, **kwargs)
        started.append(replica)
        if start:
            replica.start()
        return replica

    yield make
    for replica in started:
        if replica.thread.is_alive():
            replica.stop()


VOLUME_DRIVER = "csi.example.com"


def volume_objects() -> list[dict[str, Any]]:
    """A WaitForFirstConsumer class, one Available volume and two claims of it: ``static`` (the
    volume fits it) and ``dynamic`` (bigger than the volume: to be provisioned)."""
    return [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "wait"},
         "provisioner": VOLUME_DRIVER, "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Delete"},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"},
         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "wait",
                  "volumeMode": "Filesystem", "csi": {"driver": VOLUME_DRIVER, "volumeHandle": "vol-1"}},
         "status": {"phase": "Available"}},
        *({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
           "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "wait", "volumeMode": "Filesystem",
                    "resources": {"requests": {"storage": size}}}, "status": {"phase": "Pending"}}
          for name, size in (("static", "1Gi"), ("dynamic", "5Gi"))),
    ]


def pod_with_claims(name: str, *claims: str) -> dict[str, Any]:
    obj = pod(name)
    obj["spec"]["volumes"] = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    return obj


def complete_volume_bindings(fake: FakeApiServer) -> None:
    """Do what the PersistentVolume controller and an external provisioner would: finish the
    bindings the scheduler started (a volume's claimRef, a claim's selected node)."""
    bound = {"pv.kubernetes.io/bind-completed": "yes"}
    for volume in fake.list("PersistentVolume"):
        ref = (volume.get("spec") or {}).get("claimRef")
        claim = fake.get("PersistentVolumeClaim", ref["namespace"], ref["name"]) if ref else None
        if claim is not None and not claim["spec"].get("volumeName"):
            fake.patch("PersistentVolumeClaim", ref["namespace"], ref["name"], {
                "metadata": {"annotations": bound}, "spec": {"volumeName": volume["metadata"]["name"]},
                "status": {"phase": "Bound"}})
    for claim in fake.list("PersistentVolumeClaim"):
        meta = claim["metadata"]
        if "volume.kubernetes.io/selected-node" in (meta.get("annotations") or {}) \
                and not claim["spec"].get("volumeName"):
            name = f"pvc-{meta['name']}"
            fake.create({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                         "spec": {"capacity": claim["spec"]["resources"]["requests"], "accessModes": ["ReadWriteOnce"],
                                  "storageClassName": "wait", "csi": {"driver": VOLUME_DRIVER, "volumeHandle": name},
                                  "claimRef": {"namespace": meta["namespace"], "name": meta["name"],
                                               "uid": meta["uid"]}},
                         "status": {"phase": "Bound"}})
            fake.patch("PersistentVolumeClaim", meta["namespace"], meta["name"], {
                "metadata": {"annotations": bound}, "spec": {"volumeName": name}, "status": {"phase": "Bound"}})
