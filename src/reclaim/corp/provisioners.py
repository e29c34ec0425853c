"""CORP's own provisioner: :class:`reclaim.forecast.corp.UnusedPredictor` answering the
:class:`reclaim.corp.provisioning.Provisioner` protocol.

Lendable amount per job = the eq. 19 lower bound on its unused allocation where eq. 21 unlocks it,
else 0 (section III-A-2/3), clipped to [0, request]. Its estimate (Fig. 6's prediction) is the
DNN + HMM point and the eq. 19 bound, unlocked or not.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from reclaim.core.capabilities import ProvisionerCapabilities
from reclaim.core.grouped import GroupedArray
from reclaim.corp.provisioning import UnusedEstimate
from reclaim.errors import ReclaimError
from reclaim.forecast.corp import UnusedPrediction, UnusedPredictor
from reclaim.registry import register


@register("provisioner", "corp")
class CorpProvisioner(UnusedPredictor):
    """CORP (DNN + HMM + confidence bound + unlock rule) for one resource: the predictor itself,
    with its settings (window = Delta slots of input, horizon = L slots predicted, confidence
    eta, epsilon and p_threshold of eq. 21, ...) and its ``fit(usage, request)``, answering
    ``lendable``, which must be asked for the window it was built for (``horizon``).
    """

    #: Read only by ``predict`` (the bound and the unlock rule), never by ``fit``: a sweep over
    #: them reuses one fitted network (:mod:`reclaim.corp.experiment`).
    PREDICT_SETTINGS = ("confidence", "epsilon", "p_threshold")
    __capabilities__ = ProvisionerCapabilities()

    def lendable(
        self, history: GroupedArray, request: NDArray[np.float64], horizon: int
    ) -> NDArray[np.float64]:
        """(S,) ``lower`` where ``unlock``, else 0, in the units of ``request``."""
        req, seen, pred = self._predict(history, request, horizon)
        lend = np.zeros(len(req))
        if pred is not None:
            lend[seen] = np.clip(np.where(pred.unlock, pred.lower, 0.0), 0.0, req[seen])
        return lend

    def estimate(
        self, history: GroupedArray, request: NDArray[np.float64], horizon: int
    ) -> UnusedEstimate:
        """Point = the DNN + HMM prediction (``corrected``), lower = the eq. 19 bound; a job
        with fewer than ``window`` (Delta) slots of history has no prediction (the predictor's
        fallback is a history mean, not the DNN)."""
        req, seen, pred = self._predict(history, request, horizon)
        point, lower, valid = np.zeros(len(req)), np.zeros(len(req)), np.zeros(len(req), bool)
        if pred is not None:
            point[seen] = np.clip(pred.corrected, 0.0, req[seen])
            lower[seen] = np.clip(pred.lower, 0.0, req[seen])
            valid[seen] = ~pred.fallback
        return UnusedEstimate(np.where(valid, point, 0.0), np.where(valid, lower, 0.0), valid)

    def _predict(
        self, history: GroupedArray, request: NDArray[np.float64], horizon: int
    ) -> tuple[NDArray[np.float64], NDArray[np.int64], UnusedPrediction | None]:
        """(requests (S,), the series with usage, their prediction or None if there is none)."""
        if not hasattr(self, "network_"):
            raise ReclaimError("corp provisioner: call fit before lendable")
        if horizon != self.horizon:
            raise ReclaimError(f"corp provisioner predicts {self.horizon} slots, asked {horizon}")
        req = np.asarray(request, np.float64).reshape(-1)
        seen = np.flatnonzero(history.lengths > 0)  # no usage yet: nothing known to lend
        if not len(seen):
            return req, seen, None
        batch = history if len(seen) == len(req) else history.take(seen)
        return req, seen, self.predict(batch, req[seen])
