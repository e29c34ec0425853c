"""Built-in placement plugins; importing this package registers them by name."""

from reclaim.placement.plugins import (  # noqa: F401
    best_fit,
    corp_packing,
    first_fit,
    lifetime,
    random_fit,
    stranding,
    tetris,
)
