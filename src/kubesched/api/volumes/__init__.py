"""PersistentVolumes and their claims: the rules the scheduler's volume plugins and the embedded
PersistentVolume controller share (upstream ``k8s.io/component-helpers/storage/volume`` and
``storage/ephemeral``), so that both sides always agree on which volume fits which claim.

- :mod:`~kubesched.api.volumes.claims`: the binding annotations, a claim's and a volume's class,
  size and binding state, the claims a pod uses, access and volume modes, and
  :func:`~kubesched.api.volumes.claims.find_matching_volume`, the search for a claim's volume.
- :mod:`~kubesched.api.volumes.topology`: where a volume can be used: its node affinity, the
  hostnames of local volumes, zone labels, a StorageClass's ``allowedTopologies``, attach limits.
- :mod:`~kubesched.api.volumes.candidates`: the same search made once per scheduling cycle and
  kept across cycles (:class:`~kubesched.api.volumes.candidates.CandidateIndex`), for the
  VolumeBinding plugin on large clusters.

Everything here reads plain API objects and changes none.
"""
