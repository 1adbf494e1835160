"""NUMA topology: the node's zones, the simulated kubelet resource managers, the pod resources API,
the NodeResourceTopology exporter, and the pieces the ``NodeResourceTopologyMatch`` plugin reads.

Layout (each module stands alone; the scheduler side never imports the cluster side):

- :mod:`.model`       zones, CPU ids, NUMA masks (machine description)
- :mod:`.qos`         pod QoS class, per-container requests, exclusive resources
- :mod:`.config`      the compact ``spec.cluster.topology`` form: validation and parsing
- :mod:`.hints`       Topology Manager hints, merge and admission per policy
- :mod:`.managers`    CPU manager (static), memory manager (Static), device assignment per zone
- :mod:`.podresources` the kubelet pod resources API (List, GetAllocatableResources, Watch)
- :mod:`.exporter`    NodeResourceTopology objects from the pod resources API (poll or watch)
- :mod:`.kubelet`     the embedded-cluster subsystem gluing the above to the node agent
- :mod:`.fingerprint` the pod set fingerprint (podfingerprint ``pfp0v001`` format)
- :mod:`.nrt`         parsing NodeResourceTopology objects (scheduler side)
- :mod:`.scoring`     the plugin's score strategies, as pure functions
- :mod:`.nrtcache`    the plugin's passthrough / overreserve / discard-reserved views
"""
