"""The test kit every test (and the benchmarks) build on.

- :mod:`~kubesched.testkit.builders`: one builder per object kind (Node, Pod, container,
  PriorityClass, PodDisruptionBudget, ResourceQuota, Namespace, workloads, NodeResourceTopology,
  KubeSchedulerConfiguration).
- :mod:`~kubesched.testkit.scenarios`: Scenario documents and steps, and writing them to a file.
- :mod:`~kubesched.testkit.runs`: simulating a file or documents (through
  :func:`kubesched.sim.simulate`) and :class:`ScenarioRun`, the queries tests make on the outcome
  (events, pod outcomes, preemption decisions, pod versions of a deep run).
- :mod:`~kubesched.testkit.framework`: a fake framework handle and snapshot for plugin unit tests,
  over NodeInfos and the scheduler cache built from node and pod objects.
- :mod:`~kubesched.testkit.dumps`: cluster dumps as ``kubectl get ... -o yaml|json`` prints them
  (nodes, pods and their workloads, classes, PDBs, storage), for tests of snapshot input.
"""
