"""Shaping controllers; importing this package registers them by name."""

from reclaim.shaping import reservation  # noqa: F401
