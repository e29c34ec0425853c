"""Built-in placement plugins; importing this package registers them by name."""

from reclaim.placement.plugins import best_fit, first_fit  # noqa: F401
