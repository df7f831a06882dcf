"""The stale-kernel-cache guard (freeflyer_control.physics.kernels.cache) against real numba caches.

A tiny package in tmp_path has a cached kernel in ``tinypkg/kern.py`` that compiles a plain law
from ``tinypkg/laws/helper.py`` (as physics/kernels/rigid_body.py compiles control/maneuvers.py's
wilde_profile); each run is a fresh interpreter, as after a ``git pull``.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from freeflyer_control.physics import kernels as fast
from freeflyer_control.physics.kernels import cache

pytestmark = pytest.mark.skipif(not fast.available(), reason="needs numba (pip extra fast)")

KERN = """
from numba import njit
from tinypkg.laws.helper import law

law_compiled = njit(cache=True)(law)


@njit(cache=True)
def kernel(x):
    return 2.0 * law_compiled(x)
"""
HELPER = "def law(x):\n    return x + {offset}\n"
SOURCES = ("kern.py", "laws/helper.py")

RUN = """
import json, logging, sys
from pathlib import Path
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
root, guard = sys.argv[1], sys.argv[2] == "guard"
sys.path.insert(0, root)
if guard:
    from freeflyer_control.physics.kernels.cache import refresh
    refresh(Path(root, "tinypkg"), {sources!r})
from tinypkg import kern
value = kern.kernel(1.0)
print(json.dumps({{"value": value, "hits": sum(kern.kernel.stats.cache_hits.values())}}))
""".format(sources=SOURCES)


def _tiny_package(root: Path, offset: float) -> Path:
    pkg = root / "tinypkg"
    (pkg / "laws").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "laws" / "__init__.py").write_text("")
    (pkg / "kern.py").write_text(KERN)
    _set_law(pkg, offset)
    return pkg


def _set_law(pkg: Path, offset: float) -> None:
    (pkg / "laws" / "helper.py").write_text(HELPER.format(offset=offset))


def _run(root: Path, guard: bool, numba_cache_dir: Path | None = None) -> tuple[dict, str]:
    """One fresh interpreter: (the kernel's value at 1.0 and its cache hits, its log)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a .pyc of the same size and second would hide the edit
    env["XDG_CACHE_HOME"] = str(root / "user_cache")  # keep numba's user-wide cache in tmp_path
    if numba_cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(numba_cache_dir)
    proc = subprocess.run([sys.executable, "-c", RUN, str(root), "guard" if guard else "none"],
                          env=env, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(proc.stdout), proc.stderr


def _cache_files(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in directory.glob("kern.*.nb[ic]")}


def test_numba_alone_loads_stale_code_after_a_dependency_changes(tmp_path):
    # The premise of the guard: if numba ever invalidates on dependencies, this fails and the
    # guard can go.
    pkg = _tiny_package(tmp_path, 1.0)
    assert _run(tmp_path, guard=False)[0]["value"] == 4.0
    _set_law(pkg, 2.0)
    assert _run(tmp_path, guard=False)[0]["value"] == 4.0  # 2 * (1 + 1): the old law


def test_changed_dependency_clears_the_cache_and_the_next_call_uses_the_new_law(tmp_path):
    pkg = _tiny_package(tmp_path, 1.0)
    first, log = _run(tmp_path, guard=True)
    assert first == {"value": 4.0, "hits": 0} and "cleared" not in log
    _set_law(pkg, 2.0)
    second, log = _run(tmp_path, guard=True)
    assert second == {"value": 6.0, "hits": 0}  # 2 * (1 + 2), recompiled
    assert log.count("INFO numba kernel cache cleared: sources changed since it was built") == 1


def test_changed_dependency_clears_a_cache_under_numba_cache_dir(tmp_path):
    pkg = _tiny_package(tmp_path, 1.0)
    numba_dir = tmp_path / "numba_cache"
    assert _run(tmp_path, guard=True, numba_cache_dir=numba_dir)[0]["value"] == 4.0
    assert list(numba_dir.glob("*/kern.kernel-*.nbi")), "numba did not cache under NUMBA_CACHE_DIR"
    assert not list((pkg / "__pycache__").glob("*.nbi"))
    _set_law(pkg, 2.0)
    assert _run(tmp_path, guard=True, numba_cache_dir=numba_dir)[0] == {"value": 6.0, "hits": 0}


def test_unchanged_sources_keep_the_cache(tmp_path):
    pkg = _tiny_package(tmp_path, 1.0)
    _run(tmp_path, guard=True)
    built = _cache_files(pkg / "__pycache__")
    assert built, "numba did not cache the kernel in tinypkg/__pycache__"
    again, log = _run(tmp_path, guard=True)
    assert again == {"value": 4.0, "hits": 1}  # loaded, not compiled
    assert _cache_files(pkg / "__pycache__") == built  # same files, not rewritten
    assert "cleared" not in log


def test_cache_built_before_the_guard_existed_is_cleared(tmp_path):
    # A cache with no stamp beside it may predate any edit: it cannot be trusted.
    pkg = _tiny_package(tmp_path, 1.0)
    _run(tmp_path, guard=False)
    assert _cache_files(pkg / "__pycache__")
    cleared = cache.refresh(pkg, SOURCES)
    assert set(cleared) == {pkg / "__pycache__", pkg / "laws" / "__pycache__"}  # kernel, law
    assert not _cache_files(pkg / "__pycache__")
    assert not list((pkg / "laws" / "__pycache__").glob("*.nb[ic]"))


def _make_read_only(directory: Path) -> None:
    directory.chmod(0o555)
    if os.access(directory, os.W_OK):  # root ignores the mode; the immutable flag binds root too
        if subprocess.run(["chattr", "+i", str(directory)], capture_output=True).returncode:
            directory.chmod(0o755)
            pytest.skip("cannot make a directory read-only here (root without chattr)")


def _make_writable(directory: Path) -> None:
    subprocess.run(["chattr", "-i", str(directory)], capture_output=True)
    directory.chmod(0o755)


def test_read_only_cache_dir_is_skipped_quietly(tmp_path, package_log):
    pkg = _tiny_package(tmp_path, 1.0)
    pycache = pkg / "__pycache__"
    pycache.mkdir()
    stale = pycache / "kern.kernel-8.py311.nbi"
    stale.write_bytes(b"built from other sources")
    _make_read_only(pycache)
    try:
        with package_log.at_level(logging.DEBUG, cache.__name__):
            cleared = cache.refresh(pkg, SOURCES)
    finally:
        _make_writable(pycache)
    assert pycache not in cleared and stale.exists()
    assert all(r.levelno == logging.DEBUG for r in package_log.records)
    assert any("cannot write" in m for m in package_log.messages)


def test_cache_dirs_are_where_numba_puts_the_caches(tmp_path, monkeypatch):
    from numba.core import caching, config

    def probe():
        pass

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba_cache"))
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "numba_cache"))
    for source in cache.KERNEL_SOURCES:
        py_file = str(cache.PACKAGE_DIR / source)
        numba_dirs = [cls(probe, py_file).get_cache_path() for cls in (
            caching.UserProvidedCacheLocator, caching.InTreeCacheLocator,
            caching.UserWideCacheLocator)]
        assert [str(d) for d in cache.cache_dirs(Path(py_file).parent)] == numba_dirs, source


# --- the list covers every module compiled into a kernel -----------------------------------


def _module_sources() -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the package."""
    package = cache.PACKAGE_DIR
    out = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


COMPILERS = {"njit", "jit", "register_jitable", "generated_jit", "vectorize", "guvectorize",
             "cfunc", "stencil", "overload"}


def _compiles(tree: ast.Module) -> bool:
    """The module imports one of numba's compiling decorators (not merely numba's events)."""
    return any(isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "numba"
               and any(a.name in COMPILERS for a in n.names)
               or isinstance(n, ast.Attribute) and n.attr in COMPILERS
               and getattr(n.value, "id", None) == "numba"
               for n in ast.walk(tree))


def _package_imports(tree: ast.Module, modules: dict[str, Path]) -> set[Path]:
    """The package's source files this module imports from at module level."""
    found = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "") in modules:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"  # from freeflyer_control.control import allocation_kernel
                found.add(modules[sub] if sub in modules else modules[node.module])
        elif isinstance(node, ast.Import):
            found.update(modules[a.name] for a in node.names if a.name in modules)
    return found


def _kernel_modules() -> dict[Path, ast.Module]:
    trees = {p: ast.parse(p.read_text()) for p in _module_sources().values()}
    return {p: t for p, t in trees.items() if _compiles(t)}


def test_kernel_sources_cover_every_module_compiled_into_a_kernel():
    modules = _module_sources()
    listed = {cache.PACKAGE_DIR / s for s in cache.KERNEL_SOURCES}
    needed = set()
    for path, tree in _kernel_modules().items():
        needed.add(path)
        needed.update(_package_imports(tree, modules) - {Path(cache.__file__)})
    rel = lambda paths: sorted(str(p.relative_to(cache.PACKAGE_DIR)) for p in paths)  # noqa: E731
    assert rel(needed - listed) == [], "add these to physics/kernels/cache.py KERNEL_SOURCES"
    assert rel(listed - needed) == [], "no kernel module imports these: drop them from the list"


# The packages kernel modules may live in: physics.kernels checks the cache when it is imported,
# the other two import it from their __init__ before any of their modules loads.
KERNEL_PACKAGES = ("physics/kernels", "control/kernels", "sim/fast")


def test_every_kernel_module_checks_the_cache_before_its_kernels_load():
    home = Path(cache.__file__).parent
    assert _calls_ensure_fresh(ast.parse((home / "__init__.py").read_text())), \
        "physics/kernels/__init__.py must call ensure_fresh()"
    for path in _kernel_modules():
        package = path.parent.relative_to(cache.PACKAGE_DIR).as_posix()
        assert package in KERNEL_PACKAGES, \
            f"{path}: numba kernels belong in {', '.join(KERNEL_PACKAGES)} (their imports check the cache)"
        if path.parent != home:
            init = ast.parse((path.parent / "__init__.py").read_text())
            assert _imports_physics_kernels(init), \
                f"{path.parent}/__init__.py must import freeflyer_control.physics.kernels first"


def test_importing_the_compiled_path_checks_the_cache_once(tmp_path):
    # importing the module imports its package physics.kernels first; a second check would call
    # refresh = None and fail
    code = ("import freeflyer_control.physics.kernels.cache as c; done = c._done; c.refresh = None; "
            "c.ensure_fresh(); print(done)")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.strip() == "True"


def _imports_physics_kernels(tree: ast.Module) -> bool:
    return any((isinstance(n, ast.ImportFrom) and n.module == "freeflyer_control.physics.kernels")
               or (isinstance(n, ast.Import) and any(a.name == "freeflyer_control.physics.kernels" for a in n.names))
               for n in ast.walk(tree))


def _calls_ensure_fresh(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
               and getattr(n.value.func, "id", None) == "ensure_fresh" for n in ast.walk(tree))
