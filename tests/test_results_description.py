"""companion.experiments.results.describe_run: a results header as the lines the book prints."""

from __future__ import annotations

from companion.experiments.results import LINE, describe_run, find_results, load_results


def test_describe_run_wraps_the_command_to_the_book_column_at_spaces_only() -> None:
    results = load_results(find_results("cpu-ablation"))
    lines = describe_run(results).splitlines()
    assert all(len(line) <= LINE for line in lines)
    command = [line for line in lines if not line.startswith(("hardware", "software", "code"))]
    words = " ".join(line.removeprefix("command :").strip() for line in command[:6]).split()
    assert " ".join(words).startswith(results["header"]["command"][:200])
    assert "grid-cell:rel:abs-offset-bias" in words  # an option is never cut at its hyphen


def test_describe_run_states_hardware_commit_and_wall_time_from_the_header() -> None:
    results = load_results(find_results("cpu-ablation"))
    header, text = results["header"], describe_run(results)
    git = header["git"]
    assert f"commit {git['commit']} | uncommitted changes: {git['dirty']}" in text
    assert f"wall time {header['wall_s'] / 60:.1f} min" in text
    assert f"GPU: {header['gpu']}" in text and header["cpu"] in text


def test_describe_run_adds_the_budget_only_when_asked() -> None:
    results = load_results(find_results("cpu-ablation"))
    assert "budget  : 20 epochs" in describe_run(results)
    assert "budget" not in describe_run(results, budget=False)


def test_describe_run_names_the_variants_seeds_and_a_curriculum() -> None:
    results = load_results(find_results("cpu-ablation"))
    plan = {**results["plan"], "extra_seeds": [0, 1]}
    plan["train"] = {**plan["train"], "curriculum_epochs": 5}
    text = describe_run({**results, "plan": plan})
    assert "| variants on seeds [0, 1]" in text
    assert "schedule: the first 5 epochs on the distance-1 training images only" in text
    assert all(len(line) <= LINE for line in text.splitlines())
