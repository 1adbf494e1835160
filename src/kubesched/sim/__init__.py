"""Simulation: clock, event loop, scenario runner, results.

``simulate(scenario_or_path, ...)`` runs a scenario and returns a :class:`SimulationOutcome` (the
SimulationResult document plus the finished :class:`Simulation`).
"""

from kubesched.sim.outcome import SimulationOutcome
from kubesched.sim.runner import Simulation, simulate

__all__ = ["Simulation", "SimulationOutcome", "simulate"]
