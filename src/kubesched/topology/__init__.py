"""NUMA topology, the pure model: the node's zones, pod QoS and per-container requests, Topology
Manager hints and policies, NodeResourceTopology objects, and the pieces the
``NodeResourceTopologyMatch`` plugin reads. Nothing here knows a cluster backend.

- :mod:`.model`       zones, CPU ids, NUMA masks (machine description)
- :mod:`.qos`         pod QoS class, per-container requests, exclusive resources
- :mod:`.hints`       Topology Manager hints, merge and admission per policy
- :mod:`.fingerprint` the pod set fingerprint (podfingerprint ``pfp0v001`` format)
- :mod:`.numaplacement` the containers' zones as NodeResourceTopology attributes (``npv0v001``)
- :mod:`.nrt`         parsing NodeResourceTopology objects
- :mod:`.scoring`     the plugin's score strategies, as pure functions
- :mod:`.nrtcache`    the plugin's passthrough / overreserve / discard-reserved views

The simulated kubelet's side (resource managers, pod resources API, exporter) lives in
:mod:`kubesched.cluster.embedded.kubelet`; the ``spec.cluster.topology`` settings in
:mod:`kubesched.api.cluster_settings.topology`.
"""
