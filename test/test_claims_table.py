"""docs/claims.md stays true to the suite: every numbered claim of the seeds' digest has its row,
and every test the table names exists (a renamed or deleted test fails here, not in a reader's
hands)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

TEST_DIR = Path(__file__).parent
CLAIMS = TEST_DIR.parent / "docs" / "claims.md"
# DIGEST.md §2.4, §3.4, §4.3, §6.5 (T004-6 and T004-8 share a row).
EXPECTED = ([f"T000-{i}" for i in range(1, 7)] + [f"T001-{i}" for i in range(1, 11)]
            + [f"T002-{i}" for i in range(1, 7)] + [f"T004-{i}" for i in range(1, 9)])


def _defined_tests() -> dict[str, set[str]]:
    """{test file name: names of the test functions it defines}."""
    return {path.name: set(re.findall(r"^def (test_\w+)\(", path.read_text(), re.M))
            for path in TEST_DIR.glob("test_*.py")}


def test_every_seed_claim_has_a_row_and_every_test_it_names_exists():
    text = CLAIMS.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| T00")]
    claimed = {c for row in rows for c in re.findall(r"T00\d-\d+", row.split("|")[1])}
    assert claimed == set(EXPECTED), f"rows missing: {set(EXPECTED) - claimed}, unknown: {claimed - set(EXPECTED)}"
    defined = _defined_tests()
    every = set().union(*defined.values())
    named = 0
    for row in rows:
        for file, name in re.findall(r"`(?:(test_\w+\.py)::|::)?(test_\w+\*?)`", row):
            candidates = defined.get(file, set()) if file else every
            assert fnmatch.filter(candidates, name), f"{file or 'test/'}::{name} named in docs/claims.md does not exist"
            named += 1
    assert named >= len(EXPECTED)
