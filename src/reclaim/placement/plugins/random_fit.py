"""Random-fit: a uniformly random feasible host (the baselines' VM choice in CORP, section IV:
"we randomly chose a VM that can satisfy the resource demands of the job").

The draw is seeded: each call's scores come from ``np.random.default_rng([seed, digest])`` where
``digest`` hashes the call's free capacity, up mask and requests. The same input thus gives the same
host (the framework's conformance promise, and bit-for-bit reruns), while the changing free capacity
of a cluster makes successive draws independent; ``seed`` picks another family of draws.
"""

from __future__ import annotations

import hashlib

import numpy as np

from reclaim.core.capabilities import PlacementCapabilities
from reclaim.core.component import Component
from reclaim.placement.framework import CycleState, min_max_normalize
from reclaim.registry import register


@register("placement", "random-fit")
class RandomFit(Component):
    # not monotone: a fresh draw after every bind, each workload picks its own host
    __capabilities__ = PlacementCapabilities(seeded=True)

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def score(self, state: CycleState, feasible):
        """(B, H) independent uniform [0, 1) scores, a function of (seed, the call's input)."""
        digest = hashlib.blake2b(digest_size=8)
        for a in (state.free, state.up, state.request):
            digest.update(np.ascontiguousarray(a).tobytes())
        rng = np.random.default_rng([int(self.seed), int.from_bytes(digest.digest(), "little")])
        return rng.random(feasible.shape)

    normalize = staticmethod(min_max_normalize)
