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


def test_the_rerun_on_another_host_is_quoted_and_its_projection_follows_from_it() -> None:
    first = json.loads((ROOT / "benchmarks" / "cpu_options.json").read_text())
    rerun = json.loads((ROOT / "benchmarks" / "cpu_options_rerun.json").read_text())
    assert rerun["provenance"]["git"]["dirty"] is False
    # the same code on another host: the difference in speed is the host's, not the code's
    assert rerun["provenance"]["companion_sha256"] == first["provenance"]["companion_sha256"]
    assert rerun["provenance"]["platform"] != first["provenance"]["platform"]
    options = rerun["options"]
    old, new = first["options"]["eager"]["median_epoch_s"], options["eager"]["median_epoch_s"]
    slower = new / old
    eager = [t for run in options["eager"]["epoch_s"] for t in run[1:]]
    minutes = json.loads((ROOT / "benchmarks" / "ablation_budget.json").read_text())
    minutes = minutes["scenarios_min"]
    readme = " ".join((ROOT / "results" / "README.md").read_text().split())
    assert f"median epoch took {new:.2f} s, {slower:.2f} times the {old:.2f} s" in readme
    assert f"ranging from {min(eager):.1f} to {max(eager):.1f} s" in readme
    assert f"would take about {minutes['as run'] * slower:.0f} minutes" in readme
    assert f"alone about {minutes['without relation'] * slower:.0f}." in readme
    ftz = options["flush-denormal"]
    assert not ftz["same_weights_as_eager"]
    assert f"subnormals ran at {ftz['speedup_over_eager']:.2f} times eager's speed" in readme
    compile_ = options["compile"]
    assert f"`torch.compile` ran at {compile_['speedup_over_eager']:.2f} times" in readme
    assert f"a first epoch of {compile_['first_epoch_s']:.0f} s" in readme
    assert f"a plan {minutes['as run'] * slower / 90:.2f} times cheaper" in readme
    benchmarks = " ".join((ROOT / "benchmarks" / "README.md").read_text().split())
    assert f"eager epochs took {slower:.2f} times as long" in benchmarks
