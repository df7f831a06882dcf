"""Clear numba's on-disk kernel cache when any source compiled into a kernel has changed.

numba (``cache=True``) keys each cached function on the content of the ONE file that defines
it. A kernel that calls or inlines a function from another file (``wilde_profile`` from
control/maneuvers.py compiled into the plant loop of physics/kernels/rigid_body.py, the allocator of
control/allocation_kernel.py, the state laws of physics/state.py ...) keeps its cached machine
code when only that other file changes: after a ``git pull`` into an editable install the
compiled path would silently run the old law while the Python path runs the new one.

:func:`ensure_fresh` fingerprints (SHA-256) the sources of every module in
:data:`KERNEL_SOURCES` and keeps the fingerprint beside the cache files, in each directory
numba may use for them (numba 0.68, ``numba/core/caching.py``): ``$NUMBA_CACHE_DIR/<dir>_<sha1
of the source dir>`` when that variable is set, else the ``__pycache__`` next to the source when
writable, else the user-wide ``<user cache dir>/numba/<dir>_<sha1>``. When the stored
fingerprint differs (or is missing while cache files exist), the ``*.nbi`` / ``*.nbc`` files
of these modules there are deleted before any kernel loads, and the new fingerprint written.
It runs once per process, from ``physics/kernels/__init__.py``: every kernel module lives
under physics/kernels/, control/kernels/ or sim/fast/, and the last two import through it. It never imports numba, so it costs a few hundred µs of
file hashing (bench/bench_kernel_cache.py), and a location it cannot write to (a read-only
install) is skipped with a debug log line.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

PACKAGE_DIR = Path(__file__).resolve().parents[2]

# Every module whose code ends up in a cached kernel, relative to the package directory: the
# modules that define njit(cache=True) functions, and the modules whose plain functions or
# constants those compile (numba freezes imported globals into the machine code).
# test/test_kernel_cache.py scans the package's sources and fails when a module that uses numba,
# or one that such a module imports from, is missing here.
KERNEL_SOURCES = (
    "physics/kernels/rigid_body.py",
    "physics/kernels/divergence.py",
    "physics/kernels/reduced.py",
    "physics/kernels/operational_space.py",
    "physics/kernels/actuators.py",
    "control/kernels/computed_torque.py",
    "control/kernels/resolved_rate.py",
    "control/kernels/allocation.py",
    "control/kernels/references.py",
    "sim/fast/loop.py",
    "sim/fast/period.py",
    "sim/fast/record.py",
    "sim/perturbation.py",
    "control/allocation_kernel.py",
    "control/maneuvers.py",
    "control/mode_switch.py",
    "control/damping.py",
    "physics/state.py",
    "physics/wrench_bound.py",
    "physics/energy_balance.py",
    "physics/base_invariant/tree.py",
)

FINGERPRINT_FILE = "freeflyer_control-kernel-sources.sha256"
CLEARED_MESSAGE = "numba kernel cache cleared: sources changed since it was built (%s)"

_done = False


def ensure_fresh() -> None:
    """Clear this package's stale kernel caches, once per process (later calls return at once).

    Call before the first cached kernel is loaded; importing freeflyer_control.physics.kernels does.
    """
    global _done
    if _done:
        return
    _done = True
    try:
        refresh(PACKAGE_DIR, KERNEL_SOURCES)
    except (OSError, RuntimeError) as exc:  # an unreadable source, no home directory: the
        log.debug("numba kernel cache not checked: %s", exc)  # guard must never stop an import


def refresh(package_dir: Path, sources: Iterable[str]) -> list[Path]:
    """Compare the fingerprint of ``sources`` (paths relative to ``package_dir``) with the one
    stored in each cache directory numba may use for them; where it differs, delete those
    modules' ``.nbi`` / ``.nbc`` files and store the new fingerprint.

    Returns:
        the cache directories that were cleared (empty when every cache was current).
    """
    paths = [Path(package_dir, s) for s in sources]
    fingerprint = source_fingerprint(package_dir, paths)
    stems_by_dir: dict[Path, set[str]] = {}
    for p in paths:
        stems_by_dir.setdefault(p.parent, set()).add(p.stem)
    cleared = []
    for source_dir, stems in stems_by_dir.items():
        writable_found = False  # numba caches in the first of cache_dirs() it can write to
        for cache_dir in cache_dirs(source_dir):
            if writable_found and not cache_dir.is_dir():
                continue
            status = _refresh_dir(cache_dir, stems, fingerprint)
            writable_found = writable_found or status != UNWRITABLE
            if status == CLEARED:
                cleared.append(cache_dir)
    if cleared:
        log.info(CLEARED_MESSAGE, ", ".join(str(d) for d in cleared))
    return cleared


def source_fingerprint(package_dir: Path, paths: Iterable[Path]) -> str:
    """SHA-256 over each source's path (relative to ``package_dir``) and content."""
    h = hashlib.sha256()
    for p in paths:
        h.update(str(p.relative_to(package_dir)).encode() + b"\0")
        h.update(p.read_bytes() + b"\0")
    return h.hexdigest()


def cache_dirs(source_dir: Path) -> list[Path]:
    """The directories numba 0.68 may cache the functions of ``source_dir`` in, in the order of
    its locators (``_CacheImpl._locator_classes``): ``$NUMBA_CACHE_DIR``, the in-tree
    ``__pycache__``, the user-wide cache. All are checked: which one numba picks depends on
    what is writable, and a cache left in any of them would load."""
    source_dir = Path(os.path.abspath(source_dir))
    subpath = f"{source_dir.name}_{hashlib.sha1(str(source_dir).encode()).hexdigest()}"
    dirs = []
    if os.environ.get("NUMBA_CACHE_DIR"):
        dirs.append(Path(os.environ["NUMBA_CACHE_DIR"], subpath))
    dirs.append(source_dir / "__pycache__")
    dirs.append(_user_cache_dir() / subpath)
    return dirs


def _user_cache_dir() -> Path:
    """numba's ``AppDirs(appname="numba", appauthor=False).user_cache_dir`` (numba/misc/appdirs.py)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "numba"
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"), "numba", "Cache")
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "numba")


CURRENT, CLEARED, UNWRITABLE = "current", "cleared", "unwritable"


def _refresh_dir(cache_dir: Path, stems: set[str], fingerprint: str) -> str:
    """Bring one cache directory up to ``fingerprint`` (creating it, as numba would):
    CURRENT when it already was, CLEARED when stale cache files were deleted, UNWRITABLE when
    it cannot be written (a read-only install: numba cannot cache there either)."""
    stamp = cache_dir / FINGERPRINT_FILE
    try:
        if stamp.read_text().strip() == fingerprint:
            return CURRENT
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.debug("numba kernel cache in %s not checked: %s", cache_dir, exc)
        return UNWRITABLE
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        stale = [n for n in os.listdir(cache_dir)
                 if n.endswith((".nbi", ".nbc")) and n.split(".", 1)[0] in stems]
        for name in stale:
            os.unlink(cache_dir / name)
        tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}.tmp")
        tmp.write_text(fingerprint + "\n")
        os.replace(tmp, stamp)  # atomic: a concurrent reader sees the old or the new stamp
    except OSError as exc:
        log.debug("numba kernel cache in %s left as is (cannot write): %s", cache_dir, exc)
        return UNWRITABLE
    return CLEARED if stale else CURRENT
