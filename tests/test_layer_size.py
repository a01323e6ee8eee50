"""The experiments layer stays sized to the chapters it serves: every module short enough to read
in one sitting, and the layer as a whole (reading and run code together) within its line budget,
so that growth is a decision made in a commit that raises the budget, never an accident."""

from pathlib import Path

import pytest

LAYER = Path(__file__).resolve().parents[1] / "companion" / "experiments"
MODULES = sorted(LAYER.rglob("*.py"))
#: Lines a module may have (``wc -l``).
MODULE_LIMIT = 400
#: Lines the whole layer may have: today's size; raising it is a commit that says why.
LAYER_BUDGET = 4_762


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("module", MODULES, ids=lambda p: str(p.relative_to(LAYER)))
def test_no_module_of_the_experiments_layer_is_longer_than_400_lines(module):
    assert _lines(module) <= MODULE_LIMIT


def test_the_experiments_layer_stays_within_its_line_budget():
    total = sum(_lines(path) for path in MODULES)
    assert total <= LAYER_BUDGET, f"{total} lines > budget {LAYER_BUDGET}"
