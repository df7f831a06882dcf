"""Which path the GJM and H*/C* post-processing takes: compiled (numba) or NumPy.

With numba installed (the ``fast`` extra) :func:`~freeflyer_control.physics.gjm.generalized_jacobian`
and :func:`~freeflyer_control.physics.reduced.reduced_dynamics` finish with one compiled call
(:mod:`freeflyer_control.physics.kernels.reduced`); without it, or with the environment variable
``FREEFLYER_NUMBA=0``, with the NumPy / LAPACK expressions, the reference. Both give the same
numbers to round-off (test/test_compiled_post.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from typing import Iterator

import numpy as np

log = logging.getLogger(__name__)

COMPILED, NUMPY = "compiled (numba)", "NumPy"
_UNSET = object()
_kernels: object = _UNSET  # the compiled module, None for the NumPy path, or not decided yet


def kernels():
    """The compiled kernels module, or None when the NumPy path is to be used."""
    k = _kernels
    return _load() if k is _UNSET else k


def path() -> str:
    """``"compiled (numba)"`` or ``"NumPy"``: the path the next GJM / H*/C* call takes."""
    return NUMPY if kernels() is None else COMPILED


@contextlib.contextmanager
def forced(which: str) -> Iterator[None]:
    """Run the block on one path (``"numpy"`` or ``"compiled"``), e.g. to compare them.

    Raises:
        ValueError: ``which`` is neither, or is ``"compiled"`` without numba installed.
    """
    global _kernels
    if which not in ("numpy", "compiled"):
        raise ValueError(f"path '{which}' unknown; paths: numpy, compiled")
    saved = _kernels
    if which == "numpy":
        _kernels = None
    else:
        if saved is _UNSET or saved is None:
            _kernels = _import_compiled()
            if _kernels is None:
                raise ValueError("the compiled path needs numba: pip install 'freeflyer_control[fast]'")
    try:
        yield
    finally:
        _kernels = saved


_new = object.__new__
_set = object.__setattr__


def frozen(cls, fields: dict):
    """An instance of the frozen dataclass ``cls`` with these field values, built without its
    generated ``__init__`` (one ``object.__setattr__`` per field: ~0.6 µs for the seven of a
    GJM, a tenth of a compiled GJM call). Only for per-tick results whose fields the caller
    has already checked; ``fields`` must name every field."""
    obj = _new(cls)
    _set(obj, "__dict__", fields)
    return obj


def covered(build, what: str, robot: str):
    """``build()``, the compiled path's object of a per-robot law (e.g. CompiledRates), or False
    where the kernels do not implement the robot's joints (``NotCovered``: logged at info level,
    "<what> runs on NumPy for robot ..."; the caller keeps its NumPy path)."""
    from freeflyer_control.physics.kernels.arrays import NotCovered

    try:
        return build()
    except NotCovered as exc:
        log.info("%s runs on NumPy for robot '%s': %s", what, robot, exc)
        return False


def with_compile_notice(what: str, call, expect: str = "10-60 s"):
    """``call()``, a compiled path's warm-up call; if numba compiles for it (a machine's first
    use, not a load from the cache), a warning says first that ``what`` is being compiled, so
    that a first start that waits says why (physics.kernels.compile_warning)."""
    from freeflyer_control.physics.kernels import compile_warning

    with compile_warning(what, log, expect):
        return call()


def _load():
    global _kernels
    if os.environ.get("FREEFLYER_NUMBA", "1").strip() == "0":
        _kernels = None
    else:
        _kernels = _import_compiled()
    return _kernels


def _import_compiled():
    """The compiled kernels' module (imported, not compiled: each kernel compiles on its first
    call, or in :func:`warm`), or None without numba."""
    from freeflyer_control.physics import kernels

    if not kernels.available():
        return None
    from freeflyer_control.physics.kernels import reduced as compiled

    return compiled


_deferred = [0]  # depth of deferred() blocks


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Within the block, :func:`warm` compiles nothing: objects built here compile their kernels
    at first use, if they ever get one. For the compiled lockstep engine, which builds the
    Python control loop for its mode switcher and references while its own loop runs other
    kernels: a first run on a machine then compiles only what it flies."""
    _deferred[0] += 1
    try:
        yield
    finally:
        _deferred[0] -= 1


def warming() -> bool:
    """Whether objects built now should compile their kernels now (False inside :func:`deferred`)."""
    return _deferred[0] == 0


def warm(part: str) -> None:
    """Compile (or load from numba's cache) the compiled ``part`` now, not on a control tick:
    ``"gjm"`` (the GJM post-processing), ``"reduced"`` (H*, C*) or ``"saturation"`` (the
    actuators' saturation of a period's commands, ``physics.actuators``: until it is warmed,
    saturation stays on NumPy, so that no tick compiles it). Nothing without numba, on the NumPy
    path, or inside :func:`deferred`."""
    if part not in _WARM_UPS:
        raise ValueError(f"kernel part '{part}' unknown; parts: {sorted(_WARM_UPS)}")
    compiled = kernels()
    if compiled is None or not warming() or part in _warmed:
        return
    t0 = time.perf_counter()
    with_compile_notice(f"the {part} kernels", lambda: _WARM_UPS[part](compiled))
    _warmed.add(part)
    elapsed = time.perf_counter() - t0
    if elapsed > 1.0:
        log.info("compiled the %s kernels (numba) in %.1f s; cached for later runs", part, elapsed)


def _warm_gjm(compiled) -> None:
    """One call with the argument types of the hot path (C-contiguous float64 matrices and
    vectors, int64 index arrays), so that compiling happens here."""
    M, J = np.eye(7), np.zeros((6, 7))
    v, q = np.zeros(7), np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    base, none = range(6), ()
    layout = compiled.gjm_layout(False, base, base, none, (6,), none)
    layout.setflags(write=False)  # as the per-model layouts are
    compiled.gjm_post(M, J, v, q, layout, v[:0])


def _warm_reduced(compiled) -> None:
    """As :func:`_warm_gjm`, for H*, C*."""
    M = np.eye(7)
    v, q = np.zeros(7), np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    layout = compiled.reduced_layout(False, 6, (*range(6), 6), ())
    layout.setflags(write=False)
    compiled.reduced_post(M, v, v, q, layout)


def _warm_saturation(compiled) -> None:
    """As :func:`_warm_gjm`, for physics.kernels.actuators.saturated_commands."""
    from freeflyer_control.physics.kernels.actuators import CompiledSaturation

    one, none = np.ones(1), np.zeros(0)
    sat = CompiledSaturation(True, one, one, one, one, np.zeros(1, dtype=np.int64), 1.0, 1.0, 3)
    sat.saturate(one, one, one, np.zeros(3), np.zeros(4))
    sat.saturate(one, one, one, none, None)


def warmed(part: str) -> bool:
    """Whether :func:`warm` has compiled (or loaded) ``part`` in this process."""
    return part in _warmed


_WARM_UPS = {"gjm": _warm_gjm, "reduced": _warm_reduced, "saturation": _warm_saturation}
_warmed: set[str] = set()
