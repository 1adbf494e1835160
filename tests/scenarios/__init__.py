"""Scenario conformance tests (a package so module basenames cannot clash with other test dirs)."""
