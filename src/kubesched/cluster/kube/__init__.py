"""The real-cluster backend of the Cluster protocol (``kubesched run``).

The official ``kubernetes`` client is imported only inside this package, and only as transport and
auth (see :mod:`.transport`); objects are plain dicts, as everywhere in kubesched.
"""

from kubesched.cluster.kube.cluster import KubeCluster, wall_clock
from kubesched.cluster.kube.informer import InformerOptions
from kubesched.cluster.kube.leaderelection import LeaderElectionConfig, LeaderElector
from kubesched.cluster.kube.transport import ClientOptions, Transport, load_api_client

__all__ = [
    "ClientOptions",
    "InformerOptions",
    "KubeCluster",
    "LeaderElectionConfig",
    "LeaderElector",
    "Transport",
    "load_api_client",
    "wall_clock",
]
