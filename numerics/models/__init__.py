"""Adapters from real checkpoints to connection walks. See :mod:`numerics.models.base` for the
interface every family adapter implements."""
