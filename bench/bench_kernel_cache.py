"""Cost of the stale-kernel-cache guard (freeflyer_control.physics.kernels.cache), paid once per process.

Prints a Markdown table of median times over interleaved repeats of:

* ``fingerprint``: reading and hashing the sources of KERNEL_SOURCES;
* ``refresh, caches current``: the whole check when nothing changed (the fingerprint, then
  reading the stamp in each cache directory): what an import of the compiled path pays;
* ``import numba``: for scale, measured in a fresh interpreter (the compiled path imports it
  anyway).

    python bench/bench_kernel_cache.py [--repeats 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from freeflyer_control.physics.kernels import cache


def _once(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    paths = [cache.PACKAGE_DIR / s for s in cache.KERNEL_SOURCES]
    cases = {
        "fingerprint": lambda: cache.source_fingerprint(cache.PACKAGE_DIR, paths),
        "refresh, caches current": lambda: cache.refresh(cache.PACKAGE_DIR, cache.KERNEL_SOURCES),
    }
    cases["refresh, caches current"]()  # stamp every directory first
    times = {name: [] for name in cases}
    for _ in range(args.repeats):
        for name, fn in cases.items():
            times[name].append(_once(fn))
    code = "import time; t=time.perf_counter(); import numba; print(time.perf_counter()-t)"
    numba_s = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                    check=True).stdout) for _ in range(3)]
    size = sum(p.stat().st_size for p in paths)
    print(f"{len(paths)} sources, {size / 1024:.0f} KiB; load average {os.getloadavg()[0]:.2f}\n")
    print("| step | median µs |\n|---|---:|")
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(ts) * 1e6:.0f} |")
    print(f"| import numba (fresh interpreter, for scale) | {statistics.median(numba_s) * 1e6:.0f} |")


if __name__ == "__main__":
    main()
