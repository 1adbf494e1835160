"""Simulation: clock, event loop, scenario runner, results."""
