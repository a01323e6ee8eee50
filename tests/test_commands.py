"""The ``python -m companion.commands.<command>`` shims: Ctrl-C while one starts (torch
importing) is one line and status 130; ``--debug`` keeps the traceback; ``main``'s status is the
exit status."""

import builtins
import runpy
import sys
import types

import pytest

COMMANDS = ("ablation", "resolution_experiment", "learned_embedding")


@pytest.fixture
def run_command(monkeypatch):
    """``run_command(name, *argv)``: run the shim as ``python -m`` does; its ``SystemExit``."""

    def run(name: str, *argv: str) -> SystemExit:
        monkeypatch.setattr(sys, "argv", [f"companion/commands/{name}.py", *argv])
        with pytest.raises(SystemExit) as exit_info:
            runpy.run_module(f"companion.commands.{name}", run_name="__main__")
        return exit_info.value

    return run


@pytest.fixture
def interrupted_import(monkeypatch):
    """Importing any ``companion.experiments.runs`` module raises ``KeyboardInterrupt``, as Ctrl-C
    does when it arrives while torch imports."""
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("companion.experiments.runs."):
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)


@pytest.mark.parametrize("name", COMMANDS)
def test_ctrl_c_while_a_command_imports_is_one_line_and_status_130(
    name, run_command, interrupted_import, capsys
):
    assert run_command(name).code == 130
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"python -m companion.commands.{name}: interrupted while starting: nothing was run"
    ]


@pytest.mark.parametrize("name", COMMANDS)
def test_debug_keeps_the_interrupts_traceback(name, monkeypatch, interrupted_import, capsys):
    monkeypatch.setattr(sys, "argv", [f"companion/commands/{name}.py", "--debug"])
    with pytest.raises(KeyboardInterrupt):
        runpy.run_module(f"companion.commands.{name}", run_name="__main__")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("name", COMMANDS)
def test_ctrl_c_in_main_before_its_work_is_one_line_too(name, run_command, monkeypatch, capsys):
    def main():
        raise KeyboardInterrupt

    fake = types.ModuleType(f"companion.experiments.runs.{name}")
    fake.main = main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    assert run_command(name).code == 130
    assert len(capsys.readouterr().err.splitlines()) == 1


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("status", [0, 1, 130])
def test_mains_status_is_the_commands_exit_status(name, status, run_command, monkeypatch):
    fake = types.ModuleType(f"companion.experiments.runs.{name}")
    fake.main = lambda: status  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    assert run_command(name).code == status
