"""Keeping Python's cyclic garbage collector off the objects a long run starts with.

A simulation starts from its scenario's objects and ``kubesched run`` from the informers' first
lists: thousands of nodes and pods as dicts, NodeInfos and arrays that live as long as the run.
The collector's full passes walk every tracked object, so each one costs time in proportion to
that starting state, again and again, although none of it is garbage. ``gc.freeze`` moves the
objects alive now out of the collector's sight; reference counting still frees them as usual.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def long_lived_heap() -> Iterator[None]:
    """Within the block, the objects that existed at its start are left out of the collector's
    passes; at its end they are handed back (``gc.unfreeze``), so cycles among them that became
    garbage are collected then."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Within the block the cyclic collector does not run, and what exists at its end is then moved
    out of the collector's sight (``gc.freeze``, as :func:`long_lived_heap` does; a simulation's run
    hands it back at its end). For building a large starting state at once (a dump's objects read,
    validated and stored): every container made then stays alive, and each collection the
    allocations would trigger walks all of them again for nothing (half the time of loading a
    20 000-pod dump), as would the first one after the block (seconds at 150 000 pods)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
