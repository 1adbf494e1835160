"""The embedded cluster: object store, admission, controllers and simulated node agents."""
