"""Compiled (numba) physics: rigid-body algorithms, factorisations, the plant step, and the
mode post-processing (GJM, H*, C*, Lambda) as one compiled call each. Optional: needs numba
(the ``fast`` extra); :func:`available` tells, and nothing here is imported without it.

Modules: ``arrays`` (a FreeFlyerModel as flat arrays, no numba), ``rigid_body`` (kinematics,
RNEA, CRBA, ABA, the CF4 plant step), ``divergence`` (the plant's divergence check),
``reduced`` (GJM and H*/C* post-processing), ``operational_space`` (doc 004's Alg. 8),
``plant`` (plant_node's and the testbed emulator's plant on the compiled step), ``cache``
(numba's on-disk cache kept in step with every source compiled into a kernel).

Importing this package first clears numba's kernel cache where a source compiled into a kernel
changed since it was built (:mod:`.cache`): every kernel module of the package (and of
``control.kernels`` and ``sim.fast``, which import through it) loads after that check.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
from typing import Iterator


def available() -> bool:
    """True when numba can be imported (the compiled path is usable)."""
    return importlib.util.find_spec("numba") is not None


@contextlib.contextmanager
def compile_warning(what: str, log: logging.Logger, expect: str = "10-60 s") -> Iterator[None]:
    """Within the block, the first kernel numba starts compiling (not loading from its cache)
    makes ``log`` say once, as a warning, that ``what`` is being compiled: a first use on a
    machine waits, and says why."""
    from numba.core import event

    class _Notice(event.Listener):
        told = False

        def on_start(self, ev):
            if not self.told:  # one event per compiled function: say it once
                self.told = True
                log.warning("compiling %s (numba, first use on this machine, %s; cached for later runs)",
                            what, expect)

        def on_end(self, ev):
            pass

    with event.install_listener("numba:compile", _Notice()):
        yield


if available():
    from freeflyer_control.physics.kernels.cache import ensure_fresh

    ensure_fresh()
