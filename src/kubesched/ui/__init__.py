"""``kubesched ui``: the simulator in a browser (see docs/ui.md)."""
