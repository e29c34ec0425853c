"""Actuators: a controller's :class:`Decisions` applied to real cgroups or Docker containers.

Both follow :class:`reclaim.core.view.Actuator` (as the simulator's SimActuator does): evictions
first (they free capacity), then resizes; one Status per row, resizes first then evictions.
Memory limits are *soft* (v1 ``memory.soft_limit_in_bytes``, v2 ``memory.high``, Docker's
``mem_reservation``), as in the shaping paper's deployment: under pressure the kernel reclaims from
components above their soft limit first instead of killing anything; preemption is the agent's
explicit SIGKILL, never the OOM killer's choice.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from reclaim.agent.cgroups import GIB, Cgroups
from reclaim.core.types import CPU, MEM, Decisions, Status
from reclaim.errors import ReclaimError

_DOCKER_CPU_PERIOD_US = 100_000
_MIN_QUOTA_US = 1000  # Docker and the kernel refuse less


def _status(decisions: Decisions, resized: NDArray[np.bool_], evicted: NDArray[np.bool_]):
    """Status per row: OK, or UNSCHEDULABLE where the write or the kill did not go through."""
    ok = np.concatenate([resized, evicted])
    return np.where(ok, Status.OK, Status.UNSCHEDULABLE).astype(np.int8)


class CgroupActuator:
    """Writes soft memory limits and CPU quotas, and kills, through :class:`Cgroups`."""

    def __init__(self, cgroups: Cgroups, names: list[str]) -> None:
        self.cgroups = cgroups
        self.names = names

    def apply(self, decisions: Decisions) -> NDArray[np.int8]:
        decisions.require(("resize", "evict"), "the cgroup actuator")
        evicted = np.array([self._kill(i) for i in decisions.evict], dtype=bool)
        names = [self.names[i] for i in decisions.resize_rows]
        resized = self.cgroups.write_limits(names, decisions.resize_limit)
        return _status(decisions, resized, evicted)

    def _kill(self, row: int) -> bool:
        try:
            self.cgroups.kill(self.names[row])
        except OSError:
            return False
        return True


def docker_client() -> tuple[Any, type[Exception]]:
    """A Docker client from the environment and its API error class, or a one-line error if
    the extra is missing."""
    try:
        import docker
    except ImportError:
        raise ReclaimError(
            "the Docker backend needs the docker extra: pip install 'reclaim[docker]'"
        ) from None
    return docker.from_env(), docker.errors.APIError


class DockerActuator:
    """The same decisions through the Docker API: ``container.update(mem_reservation=,
    cpu_quota=)`` and ``container.kill()``; components are containers by name.

    Untested against a real engine (none on the build machines; the tests drive it with a stub
    client); the collector still reads usage from the containers' cgroups (``parent`` = Docker's
    cgroup parent, component names = container ids or names as the cgroup directories read).
    """

    def __init__(
        self, names: list[str], client: Any = None, api_error: type[Exception] = Exception
    ) -> None:
        self.names = names
        if client is None:
            client, api_error = docker_client()
        self.client, self.api_error = client, api_error

    def apply(self, decisions: Decisions) -> NDArray[np.int8]:
        decisions.require(("resize", "evict"), "the Docker actuator")
        evicted = np.array([self._try(i, "kill") for i in decisions.evict], dtype=bool)
        resized = np.array(
            [
                self._try(i, "update", **self._limits(limit))
                for i, limit in zip(decisions.resize_rows, decisions.resize_limit, strict=True)
            ],
            dtype=bool,
        )
        return _status(decisions, resized, evicted)

    @staticmethod
    def _limits(limit: NDArray) -> dict[str, int]:
        """Docker's update arguments: quota in us per 100 ms period (-1: none), memory
        reservation in bytes (0: none)."""
        cpu, mem = float(limit[CPU]), float(limit[MEM])
        quota = max(_MIN_QUOTA_US, round(cpu * _DOCKER_CPU_PERIOD_US)) if np.isfinite(cpu) else -1
        return {
            "cpu_period": _DOCKER_CPU_PERIOD_US,
            "cpu_quota": quota,
            "mem_reservation": int(mem * GIB) if np.isfinite(mem) else 0,
        }

    def _try(self, row: int, method: str, **kwargs: int) -> bool:
        try:
            getattr(self.client.containers.get(self.names[row]), method)(**kwargs)
        except self.api_error:
            return False
        return True
