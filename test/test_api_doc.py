"""docs/api.md runs: every ```python block, in order, in one namespace (the page's promise)."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_tour_has_code_to_run():
    assert len(blocks()) >= 9


def test_every_code_block_of_the_api_tour_runs(tmp_path, monkeypatch, capsys):
    pytest.importorskip("gymnasium", reason="the tour's last block needs gymnasium (pip install 'freeflyer_control[gym]')")
    pytest.importorskip("matplotlib", reason="the tour plots (pip install matplotlib)")
    monkeypatch.chdir(tmp_path)
    # The page is a script: its module is __main__ (section 7 names its law __main__:DampedJoints).
    page = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", page)
    for i, code in enumerate(blocks(), 1):
        try:
            exec(compile(code, f"{DOC.name} block {i}", "exec"), page.__dict__)
        except Exception as exc:
            pytest.fail(f"docs/api.md block {i} raised {type(exc).__name__}: {exc}\n{code}")
    out = capsys.readouterr().out
    assert "damped_joints python" in out  # section 6 flew the law
    assert "damped_joints: parameter wn must be float in [0.01, 50], got -1" in out
    assert "(0, 'ok', True)" in out  # section 7's campaign
    assert (tmp_path / "tour_plots").is_dir()
