"""Tests that read log records pass in any order, with or without launch in the same process.

Under ``colcon test`` every test runs in one pytest process, the launch tests included. Importing
``launch.logging`` sets ``logging.setLoggerClass(LaunchLogger)``, whose loggers do not propagate
to the root, where pytest's ``caplog`` listens; the package's loggers created after that import
were invisible to ``caplog`` and two tests failed when they ran after the launch tests. Those
tests now read records through ``package_log`` (conftest.PackageLog), attached to the package's
loggers themselves; these tests keep it that way.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

TEST_DIR = Path(__file__).parent
REPO = TEST_DIR.parent

# What launch.logging does at import, reproduced without ROS: every logger created afterwards
# does not propagate (launch/logging/__init__.py: LaunchLogger.__init__ sets propagate = False;
# reset() calls logging.setLoggerClass(LaunchLogger)).
SIMULATED_LAUNCH = """
import logging
class LaunchLikeLogger(logging.getLoggerClass()):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.propagate = False
logging.setLoggerClass(LaunchLikeLogger)
"""
REAL_LAUNCH = "import launch.logging\n"


def launch_logging_available() -> bool:
    # Not find_spec("launch"): the repository's launch/ folder (launch files) is a namespace
    # package when the tests run from the repository root.
    try:
        return importlib.util.find_spec("launch.logging") is not None
    except ImportError:
        return False


def log_reading_tests() -> list[str]:
    """Node ids (file::function) of every test that takes the package_log fixture."""
    ids = []
    for path in sorted(TEST_DIR.glob("test_*.py")):
        for name in re.findall(r"^def (test_\w+)\([^)]*\bpackage_log\b", path.read_text(), re.M):
            ids.append(f"{path.relative_to(REPO)}::{name}")
    return ids


def run_after(prelude: str, tests: list[str]) -> subprocess.CompletedProcess:
    """Run ``tests`` in a fresh pytest process whose logging was first changed by ``prelude``."""
    code = prelude + "import sys, pytest\nsys.exit(pytest.main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, "-q", "-p", "no:cacheprovider", *tests],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def test_every_log_reading_test_is_found():
    ids = log_reading_tests()
    # The two that failed after the launch tests, and the root-inertia warning of the loader.
    for name in ("test_validate_and_request_mode", "test_mcap_skipped_when_mcap_ros2_is_missing",
                 "test_loader_warns_once_when_the_root_link_has_an_inertia"):
        assert any(i.endswith("::" + name) for i in ids), name


@pytest.mark.parametrize("prelude", [
    pytest.param(SIMULATED_LAUNCH, id="launch-like-logger-class"),
    pytest.param(REAL_LAUNCH, id="real-launch-logging", marks=pytest.mark.skipif(
        not launch_logging_available(),
        reason="launch not available: the real launch.logging needs a sourced ROS 2 (Jazzy)")),
])
def test_log_reading_tests_pass_after_launch_reconfigured_logging(prelude):
    proc = run_after(prelude, log_reading_tests())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_no_test_reads_log_records_through_caplog():
    offenders = [p.name for p in sorted(TEST_DIR.glob("test_*.py"))
                 if p.name != Path(__file__).name and re.search(r"\bcaplog\b", p.read_text())]
    assert not offenders, (
        f"{', '.join(offenders)} read log records through caplog, which misses the package's "
        "records once launch is imported in the same process: use the package_log fixture")
