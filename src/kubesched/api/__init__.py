"""Kubernetes object model helpers: quantities, durations, selectors, tolerations, resources,
validation and the scenario/manifest loader. Objects are plain JSON-like dicts."""
