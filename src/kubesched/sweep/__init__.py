"""Sweeps: one cluster simulated over the product of seeds, scheduler configurations, what-if changes
and sizes, here or on a Dask cluster, and summed up per configuration (see docs/sweeps.md)."""
