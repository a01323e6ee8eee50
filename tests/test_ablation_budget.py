"""benchmarks/ablation_budget.py's report is its reading of the committed records, and
results/README.md quotes that report."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def budget_module():
    path = ROOT / "benchmarks" / "ablation_budget.py"
    spec = importlib.util.spec_from_file_location("ablation_budget", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_budget_is_the_scripts_reading_of_the_committed_records() -> None:
    report = budget_module().price(ROOT / "results")
    committed = json.loads((ROOT / "benchmarks" / "ablation_budget.json").read_text())
    assert committed == json.loads(json.dumps(report))


def test_the_cheaper_plans_cost_less_and_the_readme_quotes_them() -> None:
    report = json.loads((ROOT / "benchmarks" / "ablation_budget.json").read_text())
    minutes = report["scenarios_min"]
    assert minutes["both"] < minutes["relation-short"] < minutes["as run"]
    assert minutes["both"] < minutes["test-every-2"] < minutes["as run"]
    readme = (ROOT / "results" / "README.md").read_text()
    assert f"about {minutes['relation-short']:.0f} minutes" in readme
    assert f"to about {minutes['both']:.0f}" in readme
    assert f"{report['run_epochs']:,} run-epochs" in readme
