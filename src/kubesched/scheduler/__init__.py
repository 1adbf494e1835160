"""The scheduler: queue, cache and snapshot, framework runtime, scheduling cycle, preemption."""
