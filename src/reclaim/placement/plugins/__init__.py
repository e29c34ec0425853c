"""Built-in placement plugins; importing this package registers them by name."""

from reclaim.placement.plugins import best_fit, corp_packing, first_fit, tetris  # noqa: F401
