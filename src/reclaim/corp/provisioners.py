"""CORP's own provisioner: :class:`reclaim.forecast.corp.UnusedPredictor` behind the
:class:`reclaim.corp.provisioning.Provisioner` protocol.

Lendable amount per job = the eq. 19 lower bound on its unused allocation where eq. 21 unlocks it,
else 0 (section III-A-2/3), clipped to [0, request].
"""

from __future__ import annotations

from typing import Self

import numpy as np
from numpy.typing import NDArray

from reclaim.core.component import Component
from reclaim.core.grouped import GroupedArray
from reclaim.errors import ReclaimError
from reclaim.forecast.corp import UnusedPredictor
from reclaim.registry import register


@register("provisioner", "corp")
class CorpProvisioner(Component):
    """CORP (DNN + HMM + confidence bound + unlock rule) for one resource.

    Settings are :class:`UnusedPredictor`'s (window = Delta slots of input, horizon = L slots
    predicted, confidence eta, epsilon and p_threshold of eq. 21, ...). ``lendable`` must be asked
    for the window the predictor was built for (``horizon``). Learned: ``model_``.
    """

    def __init__(
        self,
        window: int = 12,
        horizon: int = 6,
        hidden_layer_sizes: tuple[int, ...] = (50, 50, 50, 50),
        confidence: float = 0.95,
        epsilon: float = 0.1,
        p_threshold: float = 0.95,
        hmm: bool = True,
        max_train_windows: int = 20_000,
        max_iter: int = 300,
        seed: int = 0,
        hmm_extremes: str = "slots",
    ) -> None:
        self.hmm_extremes = hmm_extremes
        self.window = window
        self.horizon = horizon
        self.hidden_layer_sizes = hidden_layer_sizes
        self.confidence = confidence
        self.epsilon = epsilon
        self.p_threshold = p_threshold
        self.hmm = hmm
        self.max_train_windows = max_train_windows
        self.max_iter = max_iter
        self.seed = seed

    def fit(self, usage: GroupedArray, request: NDArray[np.float64]) -> Self:
        """Train the DNN and pool sigma_hat on past jobs' ``usage`` and ``request`` (S,)."""
        self.model_ = UnusedPredictor(**self.get_params()).fit(usage, request)
        return self

    def lendable(
        self, history: GroupedArray, request: NDArray[np.float64], horizon: int
    ) -> NDArray[np.float64]:
        """(S,) ``lower`` where ``unlock``, else 0, in the units of ``request``."""
        if not hasattr(self, "model_"):
            raise ReclaimError("corp provisioner: call fit before lendable")
        if horizon != self.horizon:
            raise ReclaimError(f"corp provisioner predicts {self.horizon} slots, asked {horizon}")
        req = np.asarray(request, np.float64).reshape(-1)
        lend = np.zeros(len(req))
        seen = np.flatnonzero(history.lengths > 0)  # no usage yet: nothing known to lend
        if len(seen):
            batch = history if len(seen) == len(req) else history.take(seen)
            pred = self.model_.predict(batch, req[seen])
            lend[seen] = np.clip(np.where(pred.unlock, pred.lower, 0.0), 0.0, req[seen])
        return lend
