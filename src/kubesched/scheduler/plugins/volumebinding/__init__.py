"""VolumeBinding: a pod's PersistentVolumeClaims must be (or become) bound to volumes its node can
reach (upstream ``plugins/volumebinding``, v1.28).

- **PreFilter**: every claim must exist, not be Lost, not be being deleted (and an ephemeral
  volume's claim must belong to the pod) — else UnschedulableAndUnresolvable with upstream's text;
  a pod without claims skips the plugin. Claims of classes with ``Immediate`` binding that are not
  bound yet make the pod wait for the PersistentVolume controller ("pod has unbound immediate
  PersistentVolumeClaims"). Bound local volumes (``kubernetes.io/hostname In`` node affinity)
  narrow the nodes to look at.
- **Filter**, per node: bound volumes' node affinity must match the node; each unbound
  ``WaitForFirstConsumer`` claim needs a matching Available volume that suits the node (the smallest
  big enough, see :func:`~kubesched.api.volumes.claims.find_matching_volume`) or else dynamic provisioning:
  a provisioner, the class's ``allowedTopologies`` matching the node and, for CSI drivers that
  publish ``CSIStorageCapacity``, enough capacity reachable from the node. A claim already carrying
  another node's ``volume.kubernetes.io/selected-node`` fits no other node.
- **Reserve** assumes the chosen volumes bound and the claims to provision annotated with the node
  (an *assume cache* over the informers' objects, :mod:`.assumecache`, so the next pods do not take
  the same volumes); **Unreserve** forgets that.
- **PreBind** (:mod:`.binder`) writes those volumes' ``claimRef`` and the claims' selected node
  through the API, then waits (polling every second, for ``bindTimeoutSeconds``, default 600) until
  the PersistentVolume controller has bound every claim; a binding undone on the way fails the
  pod's binding.

Not modelled: the translation of in-tree cloud volumes to CSI (``CSIMigration``) and the Score of
the alpha ``VolumeCapacityPriority`` gate (always 0 in a default v1.28).
"""

from kubesched.scheduler.plugins.volumebinding.assumecache import AssumeCache
from kubesched.scheduler.plugins.volumebinding.plugin import STATE_KEY, VolumeBinding

__all__ = ["STATE_KEY", "AssumeCache", "VolumeBinding"]
