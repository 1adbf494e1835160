"""Cluster dumps as kubectl writes them, for tests of snapshot input.

``kubectl get nodes,pods,pdb,priorityclasses,resourcequotas -A -o yaml`` prints one ``v1 List`` whose
items come in the order of the command's arguments (all nodes, then all pods, ...), each item with
what the API server stored: ``uid``, ``resourceVersion``, ``creationTimestamp``, ``managedFields``,
the fields admission and defaulting added (pod ``priority``, default tolerations, the service account
token volume, ``dnsPolicy``, ...), ``ownerReferences`` and ``status``.
:class:`~kubesched.testkit.dumps.cluster.ClusterDump` builds such dumps from a short description of
the cluster: nodes, Deployments (with their ReplicaSet and pods), StatefulSets, DaemonSets, bare
pods, PDBs and classes, placed and timestamped as a real cluster would show them; its ``write``
writes one out as kubectl prints it (``-o yaml``: keys sorted, 2-space block style; ``-o json``:
4-space indent) or as JSON Lines (one item a line).

- :mod:`~kubesched.testkit.dumps.cluster`: :class:`~kubesched.testkit.dumps.cluster.ClusterDump`
  and a ready-made small EKS cluster.
- :mod:`~kubesched.testkit.dumps.nodes`, :mod:`~kubesched.testkit.dumps.workloads`: its builders of
  nodes, and of pods and the workloads that own them (with kube-scheduler's :func:`fit_message
  <kubesched.testkit.dumps.workloads.fit_message>` for pending ones).
- :mod:`~kubesched.testkit.dumps.metadata`: what every object carries (timestamps, uids,
  resourceVersions, managedFields) and the base the builders extend.
- :mod:`~kubesched.testkit.dumps.kubectl_list`: writing the items as kubectl prints a List.
"""
