"""GroupedArray: many uneven series in one flat array, as statsforecast stores them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True, slots=True)
class GroupedArray:
    """Series ``i`` is ``data[indptr[i]:indptr[i+1]]``.

    data: (N,) or (N, K) array, one row per observation; indptr: (S+1,) int64, starting at 0.
    """

    data: NDArray
    indptr: NDArray[np.int64]

    def __post_init__(self) -> None:
        if self.indptr.ndim != 1 or self.indptr[0] != 0 or self.indptr[-1] != len(self.data):
            raise ValueError("indptr must start at 0 and end at len(data)")
        if np.any(np.diff(self.indptr) < 0):
            raise ValueError("indptr must be non-decreasing")

    def __len__(self) -> int:
        return len(self.indptr) - 1

    def __getitem__(self, i: int) -> NDArray:
        return self.data[self.indptr[i] : self.indptr[i + 1]]

    @property
    def lengths(self) -> NDArray[np.int64]:
        return np.diff(self.indptr)

    @classmethod
    def from_series(cls, series: list[NDArray]) -> GroupedArray:
        lengths = np.array([len(s) for s in series], dtype=np.int64)
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        data = np.concatenate(series) if series else np.empty(0)
        return cls(data, indptr)

    def take(self, idx: NDArray[np.integer]) -> GroupedArray:
        """The series at ``idx`` (in that order) as a new GroupedArray."""
        return GroupedArray.from_series([self[int(i)] for i in idx])

    def tails(self, window: int) -> GroupedArray:
        """The last ``window`` observations of every series (fewer where a series is shorter)."""
        starts = np.maximum(self.indptr[1:] - window, self.indptr[:-1])
        lengths = self.indptr[1:] - starts
        rows = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
        rows += np.arange(lengths.sum())
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        return GroupedArray(self.data[rows], indptr)
