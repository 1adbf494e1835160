"""A Scenario's ``spec.cluster``: the settings of the embedded cluster's parts, one module per key.

Each module validates its section (``validate_config(section, path, errs)``) and turns a valid one
into typed settings (``parse_config``); they only read and check data, so the manifest loader
validates a whole scenario without importing the cluster that will run it.

- :mod:`.admission`   ``admission``: the API server's ResourceQuota admission configuration
- :mod:`.eviction`    ``eviction``: the simulated kubelets' node-pressure eviction
- :mod:`.autoscaler`  ``autoscaler``: the simulated cluster autoscaler
- :mod:`.topology`    ``topology``: NUMA machines of the simulated kubelets and the topology exporter
- :mod:`.storage`     ``storage``: the simulated volume provisioners (delay, failures, topology)
"""
