from kubesched.scheduler.plugins.volumebinding.plugin import STATE_KEY, AssumeCache, VolumeBinding

__all__ = ["STATE_KEY", "AssumeCache", "VolumeBinding"]
