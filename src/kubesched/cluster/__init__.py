"""The Cluster protocol and its implementations (embedded simulator, real API server)."""
