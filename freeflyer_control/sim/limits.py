"""How large a simulation may be: the bounds on every number that sizes a run's memory or time.

A run allocates (or accumulates) one log sample per ``rate / log_rate`` control ticks and
integrates ``duration x rate x substeps`` plant steps, so a typo (``--duration 1e9``) would
otherwise ask for terabytes or for years. The bounds are far above any useful run:

* ``MAX_RATE_HZ``: 100 kHz of control rate (the loops this package runs are at 50 Hz - 1 kHz);
* ``MAX_SUBSTEPS``: 1000 plant steps per control period;
* ``MAX_PLANT_STEPS``: 1e8 plant steps per run (planar_4link at 1 kHz, measured: about 400 us
  per tick in the Python engine, 11 h for 1e8; 40 us compiled, about an hour); below it, a
  slow run is warned about with its expected run time once its pace is measured
  (:mod:`freeflyer_control.sim.progress`);
* ``MAX_LOG_SAMPLES``: 100 000 logged samples: the Python engine's recorder holds about 8 KB
  per sample (measured on spatial_7dof, peak RSS over a 15 000-sample run), so at most about
  0.8 GB; 33 minutes of simulated time at the default 50 Hz. Longer runs lower the log rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

MIN_RATE_HZ = 1.0  # slower is no control loop (and 1 / rate overflows for denormal rates)
MAX_RATE_HZ = 1e5
MAX_SUBSTEPS = 1000
MAX_PLANT_STEPS = 10**8
MAX_LOG_SAMPLES = 100_000

# How the library names its parameters; the command line passes its option names instead.
FIELD_NAMES = {"duration": "duration", "rate": "rate", "substeps": "plant_substeps",
               "log_rate": "log_rate"}


def log_samples(duration: float, rate: float, log_rate: float) -> int:
    """Samples a run logs: every ``round(rate / log_rate)``-th control tick, and the last one."""
    n_ticks = round(duration * rate)
    ratio = rate / log_rate
    log_every = max(1, round(ratio)) if math.isfinite(ratio) else n_ticks + 1
    return n_ticks // log_every + 1 + (1 if n_ticks % log_every else 0)


def run_size_problem(duration: float, rate: float, substeps: int, log_rate: float,
                     names: Mapping[str, str] = FIELD_NAMES) -> str | None:
    """Why a run of ``duration`` s at ``rate`` Hz (``substeps`` plant steps per tick, logged
    at ``log_rate`` Hz) is too large, naming the parameters by ``names``; None if it is not.
    The arguments are assumed finite and positive (checked one by one before)."""
    d, r, s, lr = (names[k] for k in ("duration", "rate", "substeps", "log_rate"))
    if rate > MAX_RATE_HZ:
        return f"{r} {rate:g} Hz is above the limit of {MAX_RATE_HZ:g} Hz; give a lower {r}"
    if substeps > MAX_SUBSTEPS:
        return f"{s} {substeps} is above the limit of {MAX_SUBSTEPS}; give a lower {s}"
    steps = duration * rate * substeps
    if not math.isfinite(steps) or steps > MAX_PLANT_STEPS:
        return (f"{d} {duration:g} s at {r} {rate:g} Hz x {s} {substeps} is {steps:.3g} plant "
                f"steps, above the limit of {MAX_PLANT_STEPS:.0e}; shorten {d} or lower {r}")
    samples = log_samples(duration, rate, log_rate)
    if samples > MAX_LOG_SAMPLES:
        return (f"{d} {duration:g} s logged at {lr} {min(log_rate, rate):g} Hz is {samples} "
                f"samples, above the limit of {MAX_LOG_SAMPLES}; lower {lr} (at most "
                f"{MAX_LOG_SAMPLES / duration:.3g} Hz for this duration) or shorten {d}")
    return None
