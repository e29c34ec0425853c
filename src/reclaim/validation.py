"""The numbers reclaim accepts, declared once: each quantity with its unit and range.

Specs, agent configs and command-line options all check their numbers through these
declarations, so ``nan``, ``inf``, a negative seed or a count that would not fit in memory is
refused the same way everywhere: one line naming where the value came from, what it must be and
what it was. The checks are pydantic's (strict: ``true`` is no number and ``1.5`` no whole
number; ``allow_inf_nan=False``: every number is finite); pydantic ships with typer already, is
widely kept, and states a range as data rather than as another hand-written ``if``.

Upper bounds are where memory or time makes one necessary: a count far beyond any real cluster
or trace would allocate or loop for hours before saying anything, so it is refused up front.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any

from reclaim.errors import ReclaimError


@dataclass(frozen=True)
class Quantity:
    """A number with its unit and range: ``integer`` or real, ``ge``/``gt`` below, ``le``/``lt``
    above (None: unbounded on that side; reals are always finite)."""

    unit: str
    integer: bool = False
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    @cached_property
    def _adapter(self):
        # pydantic is imported on first use: the CLI's start stays quick
        from pydantic import Field, Strict, TypeAdapter

        bounds = {k: getattr(self, k) for k in ("ge", "gt", "le", "lt")}
        bounds = {k: v for k, v in bounds.items() if v is not None}
        kind = int if self.integer else float
        return TypeAdapter(Annotated[kind, Strict(), Field(allow_inf_nan=False, **bounds)])

    def accepts(self, value: Any) -> bool:
        from pydantic import ValidationError

        try:
            self._adapter.validate_python(value)
        except ValidationError:
            return False
        return True

    def check(self, value: Any, where: str) -> Any:
        """``value`` (a float for a real quantity), or a ReclaimError
        ``where: expected <range> (<unit>), got <value>``."""
        if not self.accepts(value):
            raise ReclaimError(f"{where}: expected {self.describe()}, got {_show(value)}")
        return value if self.integer else float(value)

    def describe(self) -> str:
        """The range in words, e.g. ``a whole number >= 1 and <= 100,000 (machines)``."""
        bounds = [
            f"{sign} {_show(v)}"
            for sign, v in ((">=", self.ge), (">", self.gt), ("<=", self.le), ("<", self.lt))
            if v is not None
        ]
        kind = "a whole number" if self.integer else "a finite number"
        text = " and ".join([f"{kind} {bounds[0]}", *bounds[1:]]) if bounds else kind
        return f"{text} ({self.unit})" if self.unit else text


def _show(value: Any) -> str:
    """Numbers as people write them (10,000,000, 1e+08); text quoted."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return repr(value)
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return f"{value:g}"
    return f"{int(value):,}" if abs(value) < 1e15 else f"{value:g}"


def count(unit: str, most: int, least: int = 1) -> Quantity:
    """A whole number of things, ``least`` .. ``most``."""
    return Quantity(unit, integer=True, ge=least, le=most)


# ---- the quantities ------------------------------------------------------------------------
#: Seeds of np.random.default_rng and of the samplers (32 bits: some are offset per run).
SEED = Quantity("seed", integer=True, ge=0, le=2**32 - 1)
#: Spans of simulated or trace time. 100 years bounds any trace, simulation or agent period.
DAYS = Quantity("days", gt=0, le=36_500)
SECONDS = Quantity("seconds", gt=0, le=36_500 * 86_400)
SECONDS_OR_ZERO = Quantity("seconds", ge=0, le=36_500 * 86_400)
#: Resources of one machine; the bounds are traces.schema.PHYSICAL_MAX's.
CORES = Quantity("cores", gt=0, le=65_536)
GIB = Quantity("GiB", gt=0, le=float(1 << 20))
SHARE = Quantity("share", ge=0, le=1)
PROBABILITY = Quantity("probability", gt=0, lt=1)
LOAD_PERCENT = Quantity("% of the cluster", gt=0, le=100)
#: A buffer or penalty weight (controllers' k1, k2, the RL rewards' K's): finite, not negative.
WEIGHT = Quantity("weight", ge=0, le=1e9)
LEARNING_RATE = Quantity("learning rate", gt=0, le=1)
#: A placement plugin's weight in a weighted sum of scores (a zero weight would drop it).
PLACER_WEIGHT = Quantity("weight", gt=0, le=1e6)
PORT = Quantity("TCP port (0: off)", integer=True, ge=0, le=65_535)

#: Applications or workloads one run simulates: ten times Google's month of 2011 collections.
APPS = count("applications", 10_000_000)
#: Machines of one cluster: the largest trace's (Google 2011) is 12,500.
MACHINES = count("machines", 100_000)
WORKERS = count("worker processes", 1_024)
#: Workloads of one sequence or episode (the RL replay keeps them all in memory).
WORKLOADS = count("workloads", 1_000_000)
#: Units of a resource per machine in the RL replay (its state image is units wide).
UNITS = count("units", 1_024)
UNITS_OR_NONE = count("units", 1_024, least=0)
SAMPLES = count("samples", 1_000_000)
ITERATIONS = count("iterations", 10_000_000)
#: Periods, sequences, origins...: anything done this many times in a row.
REPEATS = count("repetitions", 10_000_000)
#: Settings of a sampled workload (workload.builder.WorkloadSpec) a spec or the API may set.
WORKLOAD: dict[str, Quantity] = {
    "elastic_share": SHARE,
    "core_per_elastic_app": count("core components per elastic application", 1_000),
    "normalised_mem_gib": GIB,
    "max_components_per_app": count("components per application", 1_000_000),
    "period": SECONDS,
    "arrival_days_per_150k": DAYS,
}
#: Settings of the shaping paper's own workload generator (workload.paper_world.PaperWorldSpec).
PAPER_WORLD: dict[str, Quantity] = {
    "apps_per_draw": count("applications per draw", 10_000),
    "elastic_share": SHARE,
    "max_core": count("core components", 1_000),
    "elastic_per_task": count("elastic components per task", 1_000),
    "request_scale": Quantity("times the trace's request", gt=0, le=1_000),
    "max_cpu": CORES,
    "max_mem_gib": GIB,
    "runtime_scale": Quantity("times the trace's runtime", gt=0, le=1e6),
    "max_runtime_days": DAYS,
    "gap_scale": Quantity("times the trace's gap", gt=0, le=1e6),
    "arrival_window_days": DAYS,
    "spread_days": DAYS,
    "period": SECONDS,
}
#: Grid cells one spec may expand to at all (a confirmation is asked far below this): each is
#: checked and built before the first run starts.
GRID_CELLS = count("grid cells", 100_000)
#: Runs above which ``experiment run`` asks before it starts (or takes --yes).
CONFIRM_RUNS = 1_000
#: History sizes of a forecast evaluation, samples (the longest real series hold ~9,000).
HISTORY = count("samples", 10_000)


# ---- settings of registered components ----------------------------------------------------
#: Settings of controllers, forecasters, placers and the rest, by name: what a spec's
#: ``controller_params`` / ``forecaster_params`` and the agent's config may set them to. A
#: numeric setting not named here must still be finite; names ending ``_s`` are seconds.
PARAMETERS: dict[str, Quantity] = {
    "k1": WEIGHT,
    "k2": WEIGHT,
    "coverage": PROBABILITY,
    "confidence": PROBABILITY,
    "target_percentile": PROBABILITY,
    "lower_percentile": PROBABILITY,
    "upper_percentile": PROBABILITY,
    "p_threshold": SHARE,
    "epsilon": SHARE,
    "gamma": SHARE,
    "validation_fraction": PROBABILITY,
    "failure_step": SHARE,
    "safety_margin": WEIGHT,
    "full": SHARE,
    "slack": WEIGHT,
    "threshold": SHARE,
    "window": SAMPLES,
    "history": SAMPLES,
    "horizon": SAMPLES,
    "min_length": SAMPLES,
    "min_samples": SAMPLES,
    "min_scores": SAMPLES,
    "max_failures": count("failures", 1_000_000, least=0),
    "seed": SEED,
}
FINITE = Quantity("")


def parameter(name: str, value: Any) -> Quantity | None:
    """The quantity a component's setting ``name`` must be, given ``value``; None for a value
    that is no number (names and flags are checked against the component's defaults)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if name in PARAMETERS:
        return PARAMETERS[name]
    return SECONDS_OR_ZERO if name.endswith("_s") else FINITE


def check_params(params: dict[str, Any], where: str) -> None:
    """Check each numeric setting of a component's ``params`` against its declaration."""
    for name, value in params.items():
        quantity = parameter(name, value)
        if quantity is not None:
            quantity.check(value, f"{where}.{name}")


# ---- files the user hands over ------------------------------------------------------------
def read_text(path: Path) -> str:
    """The UTF-8 text of ``path`` (a byte-order mark dropped, as every reader drops it), or one
    line naming the file and why it cannot be read; no byte of a binary file is echoed."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise ReclaimError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ReclaimError(f"{path}: is a folder, not a file") from None
    except OSError as err:
        raise ReclaimError(f"{path}: cannot read ({err.strerror or err})") from None
    if b"\x00" in data[:4096]:
        raise ReclaimError(f"{path}: binary data, not a text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ReclaimError(
            f"{path}, line {line}: not UTF-8 text (byte {data[err.start]:#04x})"
        ) from None


def read_toml(path: Path) -> dict[str, Any]:
    """``path`` parsed as TOML, or one line naming the file and the problem."""
    import tomllib

    text = read_text(path)
    if not text.strip():
        raise ReclaimError(f"{path}: empty file")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ReclaimError(f"{path}: not valid TOML ({err})") from None


def read_json_object(path: Path) -> dict[str, Any]:
    """``path`` parsed as a JSON object, or one line naming the file and the problem."""
    import json

    try:
        doc = json.loads(read_text(path))
    except ValueError as err:
        raise ReclaimError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(doc, dict):
        raise ReclaimError(f"{path}: expected a JSON object, got a {type(doc).__name__}")
    return doc
