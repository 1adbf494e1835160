from kubesched.scheduler.plugins.nodeaffinity.plugin import (
    REASON_CONFLICT,
    REASON_ENFORCED,
    REASON_POD,
    NodeAffinity,
    pod_required,
    required_mask,
)

__all__ = ["REASON_CONFLICT", "REASON_ENFORCED", "REASON_POD", "NodeAffinity", "pod_required", "required_mask"]
