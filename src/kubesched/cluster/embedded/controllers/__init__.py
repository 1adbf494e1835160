"""The controllers of the embedded cluster (what kube-controller-manager would run).

:func:`start_controllers` registers, in this order (the order watch events reach them):

1. :class:`PodIndex` — pods by controller UID, shared by the workload controllers;
2. :class:`ResourceQuotaController` — releases quota usage of finished/deleted pods;
3. :class:`DisruptionController` — PodDisruptionBudget status;
4. :class:`DeploymentController`, :class:`ReplicaSetController`, :class:`StatefulSetController`,
   :class:`DaemonSetController`, :class:`JobController` — pods for workloads, created through
   ``cluster.create`` (so admission and quota apply);
5. :class:`PodGarbageCollector` — deletes pods bound to nodes that do not exist;
6. :class:`PersistentVolumeController` — binds claims and volumes, provisions volumes;
7. :class:`EphemeralVolumeController` — creates the claims of pods' generic ephemeral volumes;
8. :class:`PodGroupController` — the status of Coscheduling's PodGroups.

Objects that already exist when the controllers start are reconciled at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesched.cluster.embedded.controllers.base import Controller
from kubesched.cluster.embedded.controllers.daemonset import DaemonSetController
from kubesched.cluster.embedded.controllers.disruption import DisruptionController
from kubesched.cluster.embedded.controllers.ephemeral import EphemeralVolumeController
from kubesched.cluster.embedded.controllers.index import PodIndex
from kubesched.cluster.embedded.controllers.job import JobController
from kubesched.cluster.embedded.controllers.persistentvolume import PersistentVolumeController
from kubesched.cluster.embedded.controllers.podgc import PodGarbageCollector
from kubesched.cluster.embedded.controllers.podgroup import PodGroupController
from kubesched.cluster.embedded.controllers.replicaset import DeploymentController, ReplicaSetController
from kubesched.cluster.embedded.controllers.resourcequota import ResourceQuotaController
from kubesched.cluster.embedded.controllers.statefulset import StatefulSetController
from kubesched.k8s.objects import key_of

if TYPE_CHECKING:
    from kubesched.cluster.embedded.cluster import EmbeddedCluster

__all__ = [
    "DaemonSetController",
    "DeploymentController",
    "DisruptionController",
    "EphemeralVolumeController",
    "JobController",
    "PodGarbageCollector",
    "PersistentVolumeController",
    "PodGroupController",
    "PodIndex",
    "ReplicaSetController",
    "ResourceQuotaController",
    "StatefulSetController",
    "start_controllers",
]


def start_controllers(cluster: EmbeddedCluster) -> list[Any]:
    index = PodIndex(cluster)
    for pod in cluster.api.list("Pod"):
        index.note(pod)
    quota = ResourceQuotaController(cluster)
    workload: list[Controller] = [
        DisruptionController(cluster, index),
        DeploymentController(cluster, index),
        ReplicaSetController(cluster, index),
        StatefulSetController(cluster, index),
        DaemonSetController(cluster, index),
        JobController(cluster, index),
    ]
    for controller in workload:
        for obj in sorted(cluster.api.list(controller.kind), key=key_of):
            controller.handle(controller.kind, None, obj)
    volumes = PersistentVolumeController(cluster, index)
    volumes.start()
    ephemeral = EphemeralVolumeController(cluster, index)
    ephemeral.start()
    groups = PodGroupController(cluster, index)
    groups.start()
    return [index, quota, *workload, PodGarbageCollector(cluster), volumes, ephemeral, groups]
