"""The hooks a simulated kubelet offers its managers (upstream ``pkg/kubelet/lifecycle``).

- :class:`PodAdmitHandler` (``lifecycle.PodAdmitHandler``): asked, in registration order, whether a
  pod bound to the node may start there; the first refusal fails the pod with its reason and message
  (eviction under node pressure, the Topology Manager's alignment).
- :class:`PodLifecycleHandler`: told when a pod starts running on its node and when it stops
  (terminal, or removed while running): resource managers, usage tracking.

Handlers register through :meth:`NodeAgent.add_pod_admit_handler
<kubesched.cluster.embedded.kubelet.nodeagent.NodeAgent.add_pod_admit_handler>` and
:meth:`~kubesched.cluster.embedded.kubelet.nodeagent.NodeAgent.add_lifecycle_handler`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kubesched.k8s.objects import Obj


@dataclass(frozen=True, slots=True)
class PodAdmitResult:
    """``lifecycle.PodAdmitResult``: admitted, or refused with a reason and a message."""

    admit: bool = True
    reason: str = ""
    message: str = ""

    @staticmethod
    def refuse(reason: str, message: str) -> PodAdmitResult:
        return PodAdmitResult(False, reason, message)


#: the answer of a handler that lets the pod in
ADMIT = PodAdmitResult()


class PodAdmitHandler(Protocol):
    def admit(self, pod: Obj, node: Obj) -> PodAdmitResult:
        """Whether ``pod`` may start on ``node`` (the Node object, or a stub with its name)."""
        ...


class PodLifecycleHandler(Protocol):
    def pod_started(self, pod: Obj, node: str) -> None:
        """``pod`` (as stored, phase Running) started on ``node``."""
        ...

    def pod_stopped(self, pod: Obj, node: str) -> None:
        """``pod``, which was running on ``node``, turned terminal or was removed."""
        ...
