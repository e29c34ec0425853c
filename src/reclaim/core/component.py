"""The settings protocol every buildable component follows: scikit-learn's.

Forecasters, controllers, placement plugins, provisioners, defragmenters and trace readers
derive from :class:`Component`, so ``get_params(deep=True)``, ``set_params`` and
``sklearn.base.clone`` work on all of them, and a sweep or a config file can read and set any
setting by name (``base__kernel`` for a wrapped forecaster's). As in scikit-learn, a
constructor stores its arguments unchanged under their own names and does nothing else; what a
component learns ends in ``_``.
"""

from __future__ import annotations

from sklearn.base import BaseEstimator


class Component(BaseEstimator):
    """scikit-learn's ``BaseEstimator``, shown with every setting (not only those changed)."""

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:  # noqa: N803  (scikit-learn's signature)
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({args})"
