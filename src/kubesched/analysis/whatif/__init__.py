"""What-if analysis (``kubesched whatif``): simulate a cluster snapshot twice from the same seed — as
it is, and with changes applied — and report the difference: who would be preempted (by whom,
where, why), which pending pods would start, PDB violations, and the impact per PriorityClass and
namespace.

The package follows the analysis from its input to its result:

- :mod:`.changes`: the changes (:class:`~.changes.Changes`) and the objects of ``--apply`` files;
- :mod:`.preemption`: whether the baseline preempts (the snapshot's configuration, or the pending
  pods' messages) and a configuration with DefaultPreemption switched;
- :mod:`.apply`: the changes checked against the snapshot and applied to a baseline and a changed
  scenario;
- :mod:`.run`: :func:`~.run.whatif`, the two sides simulated and compared;
- :mod:`.compare`: the two runs compared, the WhatIfResult document;
- :mod:`.documents`: a scenario written back as documents (``--save-changed``).

Its output is rendered by ``cli/whatif.py`` (text) and ``report/html.py`` (HTML)."""
