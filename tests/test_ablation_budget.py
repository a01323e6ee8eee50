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


def test_no_cheaper_relation_plan_reaches_the_budget_and_the_readme_says_so() -> None:
    report = json.loads((ROOT / "benchmarks" / "ablation_budget.json").read_text())
    minutes = report["scenarios_min"]
    assert minutes["without relation"] < minutes["both"]
    readme = (ROOT / "results" / "README.md").read_text()
    assert f"all, cost about {minutes['without relation']:.0f} minutes" in readme


def cpu_switch_quotes(report: dict) -> dict[str, str]:
    """What results/README.md says of benchmarks/cpu_options.json, formatted from it."""
    options = report["options"]
    eager = [t for run in options["eager"]["epoch_s"] for t in run[1:]]
    return {
        "ftz": f"{options['flush-denormal']['speedup_over_eager']:.2f}",
        "je": f"{options['jemalloc']['speedup_over_eager']:.2f}",
        "lo": f"{min(eager):.1f}",
        "hi": f"{max(eager):.1f}",
        "comp": f"{options['compile']['speedup_over_eager']:.2f}",
        "first": f"{options['compile']['first_epoch_s']:.0f}",
    }


def test_the_cpu_switch_benchmark_ran_clean_and_the_readme_quotes_it() -> None:
    report = json.loads((ROOT / "benchmarks" / "cpu_options.json").read_text())
    assert report["provenance"]["git"]["dirty"] is False
    options = report["options"]
    assert options["flush-denormal"]["same_weights_as_eager"]
    assert options["jemalloc"]["same_weights_as_eager"]
    assert not options["compile"]["same_weights_as_eager"]
    q = cpu_switch_quotes(report)
    readme = " ".join((ROOT / "results" / "README.md").read_text().split())
    assert f"to zero ran at {q['ftz']} times eager's speed" in readme
    assert f"the jemalloc allocator at {q['je']} (median epochs" in readme
    assert f"ranged from {q['lo']} to {q['hi']} s" in readme
    assert f"`torch.compile` ran at {q['comp']} times eager's speed" in readme
    assert f"its first epoch took {q['first']} s" in readme
    budget = json.loads((ROOT / "benchmarks" / "ablation_budget.json").read_text())
    needed = budget["scenarios_min"]["as run"] / 90
    assert f"Reaching 90 minutes takes {needed:.2f} times the whole plan's speed" in readme
    assert options["compile"]["speedup_over_eager"] < needed
    assert max(options[o]["speedup_over_eager"] for o in ("flush-denormal", "jemalloc")) < needed
