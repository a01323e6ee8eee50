"""The walk of loading one chapter's experiment: every module of
``companion.experiments`` the load calls into is entered from one module only, and only downward
(from a module that imports it), so a reader of the code follows one path down, never back.

The walk is recorded as it runs (``sys.setprofile``: each call whose function lies in another
module than its caller's), on the committed results. The machinery of a ``with`` (``contextlib``)
is read through, as its one line reads: the caller is the code with the ``with``.
"""

import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from test_layers import closure, import_graph

from companion.experiments import chapter1, chapter5, chapter6

PACKAGE = "companion.experiments"
RESULTS = Path(__file__).resolve().parents[1] / "results"


def walk(load: Callable[[], object]) -> dict[str, set[str]]:
    """``{module: the modules whose code called into it}`` while ``load()`` runs, for the modules
    of ``companion.experiments`` (the test's own frame is the caller ``"test"``)."""
    callers: dict[str, set[str]] = defaultdict(set)

    def entered(frame, event, arg):
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        back = frame.f_back
        while back is not None and is_contextlib(back):
            back = back.f_back
        caller = back.f_globals.get("__name__", "") if back else ""
        if module.startswith(PACKAGE) and caller != module:
            callers[module].add(caller if caller.startswith("companion") else "test")

    sys.setprofile(entered)
    try:
        load()
    finally:
        sys.setprofile(None)
    return dict(callers)


def is_contextlib(frame) -> bool:
    return frame.f_globals.get("__name__") == "contextlib"


def upward_calls(callers: dict[str, set[str]]) -> list[str]:
    """The calls of the walk from a module that does not import the one it calls (even through
    others): a step up, or sideways."""
    graph = import_graph()
    return sorted(
        f"{caller} -> {module}"
        for module, found in callers.items()
        for caller in found
        if caller != "test" and module not in closure(graph, {caller})
    )


def entered_from_several(callers: dict[str, set[str]]) -> set[str]:
    return {
        module.removeprefix(PACKAGE + ".") for module, found in callers.items() if len(found) > 1
    }


LOADS = {
    "chapter 1: learned-vit": chapter1.load_vit_embedding,
    "chapter 1: learned-vit-seeds": chapter1.load_vit_seeds,
    "chapter 1: learned-abs": chapter1.load_learned_embedding,
    # the folder as the chapter has it (chapter5.find_results): the walk is the load's
    "chapter 5: cpu-ablation": lambda: chapter5.load_results(RESULTS / "cpu-ablation"),
    "chapter 6: cpu-transfer-far": chapter6.load_far_transfer,
}


@pytest.mark.parametrize("experiment", sorted(LOADS))
def test_loading_an_experiment_walks_down_the_modules_one_path_each(experiment):
    callers = walk(LOADS[experiment])
    assert upward_calls(callers) == []
    assert entered_from_several(callers) == set()


def test_the_walk_check_sees_a_module_entered_from_two():
    callers = {
        f"{PACKAGE}.results": {f"{PACKAGE}.chapter6", f"{PACKAGE}.transfer_results"},
        f"{PACKAGE}.integrity": {f"{PACKAGE}.results"},
    }
    assert entered_from_several(callers) == {"results"}
    assert upward_calls({f"{PACKAGE}.chapter6": {f"{PACKAGE}.results"}}) == [
        f"{PACKAGE}.results -> {PACKAGE}.chapter6"
    ]
