"""What a variant's result was made from, as a digest kept in its record in ``--out`` (``inputs``).

A variant's ID names its values of the axes (``change=drain-a,seed=3``), not what those values
stand for: the base cluster, ``until``, the pool's template or selector, the configuration file a
``schedulerConfigs`` name reads and the changes a ``changes`` name makes (the files it applies
included). The digest covers all of these, so a sweep run again with the same ``--out`` takes a
record only when it was made from the same inputs; one made from others (the sweep file, its base
or a file it names changed since) is refused, or run again when asked (``--redo``). Adding seeds,
counts or change sets to a sweep changes no digest of the variants it had: those are kept.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from typing import Any

import orjson

from kubesched.api.loader import Scenario
from kubesched.replay import History
from kubesched.sweep.spec import Sweep, Variant

#: a variant's digest
Inputs = Callable[[Variant], str]


def _digest(value: Any) -> str:
    data = orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
    return hashlib.sha256(data).hexdigest()


def base_digest(base: Scenario) -> str:
    """The base as simulated: its objects, steps, seed, end, configuration and cluster settings
    (not where they were read, nor its warnings)."""
    steps = [{k: v for k, v in dataclasses.asdict(step).items() if k != "source"} for step in base.steps]
    inputs = {"objects": base.objects, "steps": steps, "seed": base.seed, "until": base.until,
              "schedulerConfiguration": base.scheduler_configuration, "cluster": base.cluster}
    if base.schedulers:  # racing schedulers (absent otherwise: the digests of other scenarios stay as they were)
        inputs["schedulers"] = [{"name": s.name, "configuration": s.configuration, "informerDelay": s.informer_delay,
                                 "bindDelay": s.bind_delay} for s in base.schedulers]
    return _digest(inputs)


def history_digest(history: History) -> str:
    """A history base as replayed: its scenario and the recorded outcomes it is compared with."""
    return _digest({"scenario": base_digest(history.scenario), "start": history.start,
                    "recorded": [dataclasses.asdict(r) for r in history.recorded]})


def variant_inputs(sweep: Sweep, base: Scenario | History) -> Inputs:
    """The digest of each variant's inputs (the base is digested once, here)."""
    digest = history_digest(base) if isinstance(base, History) else base_digest(base)
    fields = {"base": digest, "until": sweep.until, "poolTemplate": sweep.pool_template,
              "poolSelector": None if sweep.pool_selector is None else repr(sweep.pool_selector)}
    if sweep.history is not None:  # the pool label decides the agreement on node pools
        fields["poolLabel"] = sweep.history.pool_label
    common = _digest(fields)
    configs = {name: None if config is None else _digest(config[0]) for name, config in sweep.configs.items()}
    changes = {name: _digest({k: v for k, v in dataclasses.asdict(c).items() if k != "scheduler_configuration_source"})
               for name, c in sweep.changes.items()}

    def inputs(variant: Variant) -> str:
        return _digest([common, variant.config, configs.get(variant.config) if variant.config else None,
                        variant.change, changes.get(variant.change) if variant.change else None])

    return inputs
