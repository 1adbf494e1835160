"""``kubesched replay``: a cluster's recorded history played again under another configuration.

A history (an API server audit log, :mod:`.audit`; Alibaba's openb GPU trace, :mod:`.openb`) is read
into a :class:`~kubesched.replay.history.History`: a Scenario whose steps are the recorded arrivals,
deletions and node changes (pods created unbound: the scheduler under test places every one), and
what really happened to each pod, kept as the reference. :mod:`.compare` simulates the scenario and
sets each pod's replayed outcome beside its recorded one.

A composition root beside :mod:`kubesched.sim`: it builds on the simulator and the loader, and
nothing below imports it.
"""

from kubesched.replay.audit import read_audit_log
from kubesched.replay.compare import replay
from kubesched.replay.history import History, ReadReport, Recorded, ReplayError
from kubesched.replay.openb import read_openb

__all__ = ["History", "ReadReport", "Recorded", "ReplayError", "read_audit_log", "read_openb", "replay"]
# the live replay (kubesched.replay.live: replay_live, live_transport) needs the kube extra: imported
# where it is used
