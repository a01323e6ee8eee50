"""companion.widgets: controls wired to the explorers, under ipywidgets 8 and Colab's 7.7.1.

The tests named ``test_controls_*`` drive real ipywidgets objects; they run twice: in this
process (the venv's ipywidgets 8) and in a subprocess that puts ipywidgets 7.7.1 (the version Colab
ships) first on ``PYTHONPATH``. A last test runs an explorer in a live Jupyter kernel.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import torch
from nbclient import NotebookClient

from companion.explorers import relative_index_figure
from companion.relative import RelativePositionBias
from companion.widgets import (
    Explorer,
    bias_explorer,
    embedding_explorer,
    figure_png,
    relative_index_explorer,
    show_explorer,
)

ROOT = Path(__file__).resolve().parent.parent
COLAB_IPYWIDGETS = "7.7.1"
#: Set in the subprocess that runs these tests against ipywidgets 7.7.1.
EXPECTED_VERSION = os.environ.get("COMPANION_TEST_IPYWIDGETS")


def _control(explorer: Explorer, label: str):
    """The ipywidgets control whose description is ``label``."""
    box = explorer.widget()
    controls = box.children[1].children
    return next(c for c in controls if c.description == label)


# ----- without widgets --------------------------------------------------------------------------


def test_update_clamps_the_query_into_a_shrinking_window() -> None:
    explorer = relative_index_explorer((3, 3), (2, 2))
    assert explorer.update(wh=2) == {"wh": 2, "ww": 3, "row": 1, "col": 2}
    assert explorer.update(ww=1) == {"wh": 2, "ww": 1, "row": 1, "col": 0}
    assert explorer.high("row") == 1


def test_update_redraws_the_figure_for_the_new_values() -> None:
    explorer = relative_index_explorer()
    before = explorer.png
    explorer.update(wh=3, ww=3, row=1, col=1)
    assert explorer.png != before
    assert explorer.png == figure_png(relative_index_figure((3, 3), (1, 1)))


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"depth": 1}, ValueError, r"control must be one of \['wh', 'ww', 'row', 'col'\]"),
        ({"wh": 8}, ValueError, r"wh must be in \[1, 7\], got 8"),
        ({"row": 2}, ValueError, r"row must be in \[0, 1\], got 2"),  # the window has 2 rows
        ({"wh": 2.0}, TypeError, r"wh must be an int, got 2.0 \(float\)"),
    ],
)
def test_update_rejects_unknown_names_and_values_out_of_range(changes, error, message) -> None:
    explorer = relative_index_explorer()
    with pytest.raises(error, match=message):
        explorer.update(**changes)
    assert explorer.values == {"wh": 2, "ww": 3, "row": 0, "col": 0}


def test_explorers_validate_their_arguments() -> None:
    with pytest.raises(ValueError, match=r"window_size must be at most max_window=7.*\(8, 2\)"):
        relative_index_explorer((8, 2))
    with pytest.raises(ValueError, match=r"query must be a cell.*\(0, 3\)"):
        relative_index_explorer((2, 3), (0, 3))
    with pytest.raises(ValueError, match=r"head must be in \[0, 1\], got 2"):
        bias_explorer(RelativePositionBias(2, 2), head=2)
    with pytest.raises(ValueError, match=r"embedding must have shape \(1, 4, D\)"):
        embedding_explorer(torch.zeros(1, 5, 3), 2)
    with pytest.raises(TypeError, match="explorer must be an Explorer, got Figure"):
        show_explorer(relative_index_figure())


def test_every_explorer_starts_from_the_values_it_was_given() -> None:
    torch.manual_seed(0)
    assert bias_explorer(RelativePositionBias((2, 3), 4), head=3, query=4).values == {
        "head": 3,
        "row": 1,
        "col": 1,
    }
    table = torch.zeros(9, 2)
    assert bias_explorer(table, window_size=2, query=(1, 0)).values == {
        "head": 0,
        "row": 1,
        "col": 0,
    }
    explorer = embedding_explorer(torch.randn(1, 1 + 6, 4), (2, 3), (1, 2), num_prefix_tokens=1)
    assert explorer.values == {"row": 1, "col": 2}


def test_show_without_ipywidgets_still_shows_the_figure(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # makes `import ipywidgets` fail
    show_explorer(relative_index_explorer())
    out = capsys.readouterr().out
    assert "Image object" in out
    assert "widget-view" not in out


# ----- with widgets: run under ipywidgets 8 here and 7.7.1 in a subprocess ----------------------


def test_controls_run_on_the_expected_ipywidgets() -> None:
    import ipywidgets

    if EXPECTED_VERSION is not None:
        assert ipywidgets.__version__ == EXPECTED_VERSION
    else:
        assert ipywidgets.__version__.startswith("8.")


def test_controls_move_the_relative_index_explorer_and_its_bounds() -> None:
    explorer = relative_index_explorer((2, 3), (1, 2))
    rows, row = _control(explorer, "window rows Wh"), _control(explorer, "query row")
    assert (row.min, row.max, row.value) == (0, 1, 1)
    before = explorer.png
    rows.value = 4
    assert row.max == 3
    row.value = 3
    assert explorer.values == {"wh": 4, "ww": 3, "row": 3, "col": 2}
    assert explorer.png != before
    rows.value = 2  # the query row must follow the window back in
    assert (row.max, row.value) == (1, 1)
    assert explorer.values["row"] == 1
    assert explorer.png == figure_png(relative_index_figure((2, 3), (1, 2)))


def test_controls_pick_the_head_and_query_of_the_bias_explorer() -> None:
    torch.manual_seed(0)
    explorer = bias_explorer(RelativePositionBias(2, 3))
    head = _control(explorer, "head")
    assert head.options == ("head 0", "head 1", "head 2") or [o[0] for o in head.options] == [
        "head 0",
        "head 1",
        "head 2",
    ]
    head.value = 2
    _control(explorer, "query column").value = 1
    assert explorer.values == {"head": 2, "row": 0, "col": 1}


def test_controls_pick_the_patch_of_the_embedding_explorer() -> None:
    torch.manual_seed(0)
    explorer = embedding_explorer(torch.randn(6, 4), (2, 3))
    _control(explorer, "patch column").value = 2
    assert explorer.values == {"row": 0, "col": 2}


def test_controls_are_shown_before_the_figure(capsys) -> None:
    # Outside IPython, display() prints; the order and the plain-text fallback are what a
    # front end without widget support shows.
    explorer = relative_index_explorer()
    show_explorer(explorer)
    out = capsys.readouterr().out
    assert out.index("controls need a running kernel") < out.index("Image object")
    assert explorer.widget().model_id in out


@pytest.fixture(scope="session")
def colab_ipywidgets() -> Path:
    """ipywidgets 7.7.1 (and the one module it needs that newer stacks dropped) in a folder.

    Installed once with pip into the venv (ignored by git) and reused: later runs need no network.
    """
    target = Path(sys.prefix) / f"ipywidgets-{COLAB_IPYWIDGETS}"
    if not (target / "ipywidgets").is_dir():
        staging = target.with_name(target.name + f".tmp{os.getpid()}")
        packages = [f"ipywidgets=={COLAB_IPYWIDGETS}", "ipython_genutils==0.2.0"]
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
        subprocess.run([*pip, "--target", str(staging), *packages], check=True)
        os.replace(staging, target)  # whole or not at all, even if two runs race
    return target


@pytest.mark.slow
@pytest.mark.skipif(EXPECTED_VERSION is not None, reason="this is the 7.7.1 run itself")
def test_the_widget_code_also_runs_on_colabs_ipywidgets_7(colab_ipywidgets: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(colab_ipywidgets), str(ROOT)]),
        "COMPANION_TEST_IPYWIDGETS": COLAB_IPYWIDGETS,
    }
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            __file__,
            "-k",
            "test_controls_",
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "5 passed" in run.stdout


# ----- in a live kernel -------------------------------------------------------------------------


@pytest.mark.slow
def test_in_a_live_kernel_moving_a_slider_redraws_the_figure_in_place() -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "from companion.widgets import relative_index_explorer, show_explorer\n"
            "explorer = relative_index_explorer()\n"
            "show_explorer(explorer)"
        ),
        # What the front end's comm message does when the reader drags the slider.
        nbformat.v4.new_code_cell(
            "import hashlib\n"
            "explorer.widget().children[1].children[0].set_state({'value': 3})\n"
            "print(explorer.values, hashlib.sha256(explorer.png).hexdigest())"
        ),
    ]
    client = NotebookClient(
        nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(ROOT)}}
    )
    client.execute()
    controls, figure = nb.cells[0].outputs
    assert "application/vnd.jupyter.widget-view+json" in controls.data
    assert controls.data["text/plain"].endswith("controls need a running kernel]")
    printed = nb.cells[1].outputs[0].text
    assert printed.startswith("{'wh': 3, 'ww': 3, 'row': 0, 'col': 0}")
    # The figure output of cell 1 was replaced by the redrawn one (update_display_data).
    shown = hashlib.sha256(base64.b64decode(figure.data["image/png"])).hexdigest()
    assert printed.split()[-1] == shown
    # The widget state is saved with the notebook, so the built book can draw the controls.
    state = nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    models = sorted(m["model_name"] for m in state.values())
    assert models.count("IntSliderModel") == 4
    assert "VBoxModel" in models
