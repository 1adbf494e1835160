"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

- A candidate tries every ``retry_period`` (jittered by up to 1.2x): it takes the Lease when nobody
  holds it, when the holder released it (empty ``holderIdentity``), or when the holder's record has
  not changed for ``lease_duration`` as measured on the candidate's own monotonic clock since it
  first saw that record. Writes carry the Lease's resourceVersion, so two candidates racing for it
  cannot both win (the loser gets 409).
- The leader renews every ``retry_period``. It considers itself leader only while its last
  successful renewal *started* less than ``renew_deadline`` ago; since ``renew_deadline <
  lease_duration``, it stops acting before any other candidate can take over.
- :meth:`LeaderElector.stop` with ``release=True`` hands the Lease back (empty holder, duration 1 s)
  so a standby replica takes over at its next try instead of waiting for expiry.
- The Lease is kubesched's own (``kube-system/kubesched`` by default): each scheduler of a cluster
  elects its leader on a lock of its own (upstream's "Configure Multiple Schedulers" task), and
  ``kube-system/kube-scheduler`` is the default scheduler's. A candidate that has waited
  ``report_holder_after`` for a Lease another holder keeps renewing logs who holds it, and again
  every ``report_holder_every``: a standby replica waits so by design, but a kubesched given the
  default scheduler's Lease would wait forever without a word.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubesched.cluster.kube.events import micro_time
from kubesched.cluster.kube.resources import LEASE
from kubesched.cluster.kube.transport import Transport
from kubesched.k8s.objects import KUBESCHED_LEASE_NAME, ApiError, Obj, object_key

log = logging.getLogger("kubesched.kube.leaderelection")

JITTER_FACTOR = 1.2


@dataclass(frozen=True, slots=True)
class LeaderElectionConfig:
    identity: str
    lease_name: str = KUBESCHED_LEASE_NAME
    lease_namespace: str = "kube-system"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    #: how long a candidate waits for a Lease another holder keeps before it logs who holds it, and
    #: how often it logs that again while it goes on waiting
    report_holder_after: float = 30.0
    report_holder_every: float = 600.0

    @property
    def lease_key(self) -> str:
        """``namespace/name`` of the Lease."""
        return object_key("Lease", self.lease_namespace, self.lease_name)

    def validate(self) -> None:
        if not self.lease_duration > self.renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if not self.renew_deadline > JITTER_FACTOR * self.retry_period:
            raise ValueError("renewDeadline must be greater than retryPeriod*1.2")
        if not self.identity:
            raise ValueError("leader election identity must not be empty")


class LeaderElector:
    def __init__(self, transport: Transport, config: LeaderElectionConfig, clock: Callable[[], float],
                 *, monotonic: Callable[[], float] = time.monotonic, rng: random.Random | None = None) -> None:
        config.validate()
        self.transport = transport
        self.config = config
        self.clock = clock  # for the Lease's timestamps (kubesched's time unit)
        self.monotonic = monotonic
        self.rng = rng or random.Random()
        self.state_known = threading.Event()
        self.started_leading = threading.Event()
        self.lost = threading.Event()
        self.stop_event = threading.Event()
        self.transitions = 0
        self._leading = False
        self._renewed_at = 0.0
        self._lease: Obj | None = None  # last Lease we wrote or read
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._waiting_since: float | None = None  # since when another holder has kept the Lease from us
        self._reported_at: float | None = None
        self._thread: threading.Thread | None = None

    # -- state -------------------------------------------------------------------------------
    def is_leader(self) -> bool:
        return self._leading and self.monotonic() - self._renewed_at < self.config.renew_deadline

    @property
    def holder(self) -> str:
        return str(((self._observed_spec or {}).get("holderIdentity")) or "")

    def guard(self) -> None:
        """A write guard for :class:`KubeCluster`: refuse writes unless we hold a valid lease."""
        if not self.is_leader():
            raise ApiError(503, "NotLeader", f"{self.config.identity} does not hold the lease "
                           f"{self.config.lease_key}")

    # -- running -----------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="leader-election", daemon=True)
        self._thread.start()

    def run(self) -> None:
        cfg = self.config
        log.info("attempting to acquire leader lease",
                 extra={"lease": cfg.lease_key, "identity": cfg.identity})
        while not self.stop_event.is_set():
            acquired = self._try_acquire_or_renew()
            self.state_known.set()
            if acquired:
                break
            self.stop_event.wait(cfg.retry_period * (1.0 + JITTER_FACTOR * self.rng.random()))
        else:
            return
        self.started_leading.set()
        log.info("successfully acquired lease", extra={"lease": cfg.lease_key,
                                                        "identity": cfg.identity})
        while not self.stop_event.wait(cfg.retry_period):
            if self._try_acquire_or_renew():
                continue
            if self.monotonic() - self._renewed_at >= cfg.renew_deadline or not self._leading:
                self._leading = False
                self.lost.set()
                log.error("leader election lost", extra={"lease": cfg.lease_key,
                                                         "identity": cfg.identity, "holder": self.holder})
                return

    def stop(self, release: bool = True, timeout: float = 5.0) -> None:
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if release and self.is_leader():
            self._release()
        self._leading = False

    # -- one try -----------------------------------------------------------------------------
    def _record(self, previous: dict[str, Any], now: float) -> dict[str, Any]:
        ours = previous.get("holderIdentity") == self.config.identity
        transitions = int(previous.get("leaseTransitions") or 0)
        return {
            "holderIdentity": self.config.identity,
            "leaseDurationSeconds": max(1, int(round(self.config.lease_duration))),
            "acquireTime": previous.get("acquireTime") if ours and previous.get("acquireTime") else micro_time(now),
            "renewTime": micro_time(now),
            "leaseTransitions": transitions if ours else transitions + 1,
        }

    def _try_acquire_or_renew(self) -> bool:
        started = self.monotonic()
        now = self.clock()
        path = LEASE.object_path(self.config.lease_namespace, self.config.lease_name)
        # fast path: the leader renews from the Lease it last wrote, without a GET
        if self._leading and self._lease is not None:
            if self._put(path, self._lease, self._record(self._lease.get("spec") or {}, now), started):
                return True
        try:
            lease = self.transport.call("GET", path, retry=False)
        except ApiError as err:
            if err.code != 404:
                log.warning("error retrieving lease", extra={"error": err.message})
                return False
            return self._create(now, started)
        spec = lease.get("spec") or {}
        if spec != self._observed_spec:
            self._observed_spec = spec
            self._observed_at = self.monotonic()
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.config.lease_duration)
        if holder and holder != self.config.identity and self._observed_at + duration > self.monotonic():
            self._leading = False
            self._note_held_by(holder)
            return False
        return self._put(path, lease, self._record(spec, now), started)

    def _note_held_by(self, holder: str) -> None:
        """Another holder keeps the Lease: after ``report_holder_after`` of that, log who, and that the
        default kube-scheduler's Lease is not kubesched's; again every ``report_holder_every``."""
        cfg, now = self.config, self.monotonic()
        if self._waiting_since is None:
            self._waiting_since = now
        waited = now - self._waiting_since
        if waited < cfg.report_holder_after or (
                self._reported_at is not None and now - self._reported_at < cfg.report_holder_every):
            return
        self._reported_at = now
        log.warning("lease %s has been held by %s for %.0f s; if that is the default kube-scheduler, kubesched's "
                    "lease name must differ from its (--lease-name, or leaderElection.resourceName)",
                    cfg.lease_key, holder, waited,
                    extra={"lease": cfg.lease_key, "identity": cfg.identity, "holder": holder,
                           "waitedSeconds": round(waited)})

    def _create(self, now: float, started: float) -> bool:
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.config.lease_name, "namespace": self.config.lease_namespace},
            "spec": self._record({"leaseTransitions": -1}, now),
        }
        try:
            created = self.transport.call("POST", LEASE.collection_path(self.config.lease_namespace),
                                          body=lease, retry=False)
        except ApiError as err:
            log.info("lease not created", extra={"code": err.code, "error": err.message})
            return False
        self._won(created or lease, started)
        return True

    def _put(self, path: str, lease: Obj, spec: dict[str, Any], started: float) -> bool:
        body = {**lease, "spec": spec}
        try:
            updated = self.transport.call("PUT", path, body=body, retry=False)
        except ApiError as err:
            log.debug("lease update failed", extra={"code": err.code, "error": err.message})
            self._lease = None
            return False
        self._won(updated or body, started)
        return True

    def _won(self, lease: Obj, started: float) -> None:
        if not self._leading:
            self.transitions += 1
        self._waiting_since = self._reported_at = None
        self._lease = lease
        self._observed_spec = lease.get("spec") or {}
        self._observed_at = self.monotonic()
        self._renewed_at = started
        self._leading = True

    def _release(self) -> None:
        if self._lease is None:
            return
        spec = self._lease.get("spec") or {}
        now = micro_time(self.clock())
        released = {"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": now, "renewTime": now,
                    "leaseTransitions": int(spec.get("leaseTransitions") or 0)}
        path = LEASE.object_path(self.config.lease_namespace, self.config.lease_name)
        try:
            self.transport.call("PUT", path, body={**self._lease, "spec": released}, retry=False)
            log.info("released leader lease", extra={"identity": self.config.identity})
        except ApiError as err:
            log.warning("could not release the lease", extra={"error": err.message})
