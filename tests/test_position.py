"""companion.position: the position as one value, parsed once, and window codes that own their
behaviour (build, bias, rotation, resize, torus) behind one interface."""

import importlib.util
import re
from pathlib import Path

import pytest
import torch

from companion import position as position_module
from companion.attention import WindowAttention
from companion.bias_table import BiasTable
from companion.cpb import ContinuousBias
from companion.position import POS_CHOICES, Position
from companion.rope import Rotary
from companion.swin_configs import SwinConfig, model_config
from companion.train import train
from companion.train.build import build_model


@pytest.mark.parametrize("name", POS_CHOICES)
def test_every_name_parses_into_a_value_that_gives_its_name_back(name):
    position = Position.parse(name)
    assert position.name == name
    assert Position.parse(position) is position  # a value passes through unchanged


@pytest.mark.parametrize(
    ("name", "absolute", "window"),
    [
        ("none", False, None),
        ("abs", True, None),
        ("rel", False, BiasTable()),
        ("abs+rel", True, BiasTable()),
        ("cpb", False, ContinuousBias()),
        ("rope-axial", False, Rotary("axial")),
        ("rope-mixed", False, Rotary("mixed")),
    ],
)
def test_a_name_is_an_absolute_switch_and_a_window_code(name, absolute, window):
    assert Position.parse(name) == Position(absolute, window)


def test_the_questions_about_a_code_are_answered_by_the_value():
    tables = {p for p in POS_CHOICES if Position.parse(p).has_table}
    wrapping = {p for p in POS_CHOICES if Position.parse(p).can_wrap}
    assert tables == {"rel", "abs+rel"}
    assert wrapping == {"none", "abs", "rel", "abs+rel"}
    assert Position.parse("rel").resize_methods == ("bicubic", "geometric")
    assert Position.parse("cpb").resize_methods == ("geometric",)


def test_the_table_offsets_are_part_of_the_value_not_of_the_name():
    magnitude = Position.parse("abs+rel", offsets="magnitude")
    assert magnitude.window == BiasTable(offsets="magnitude") and magnitude.name == "abs+rel"
    assert Position.parse("cpb", offsets="signed") == Position.parse("cpb")  # changes nothing
    with pytest.raises(ValueError, match="which pos='cpb' does not have"):
        Position.parse("cpb", offsets="magnitude")


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: Position.parse("sinus"), ValueError, r"pos must be one of \['none'"),
        (lambda: Position.parse("rel", "both"), ValueError, "rel_bias_offsets must be one of"),
        (lambda: Position.parse(5), TypeError, r"pos must be a Position or one of \['none'.*got 5"),
        (lambda: Position(absolute=1), TypeError, "absolute must be True or False"),
        (lambda: Position(window="rel"), TypeError, "window must be a window code"),
        (lambda: WindowAttention(8, 2, 2, position="rel"), TypeError, "position must be"),
    ],
)
def test_bad_positions_are_refused_naming_the_parameter(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_the_model_config_holds_the_parsed_value():
    config = model_config("tiny-cpu", pos="abs+rel", rel_bias_offsets="magnitude")
    assert config.pos == Position(True, BiasTable(offsets="magnitude")) and config.absolute
    assert SwinConfig(img_size=32, pos="cpb").pos == Position(False, ContinuousBias())
    assert SwinConfig(img_size=32).pos == Position.parse("rel")  # the default, stated once


def test_only_a_table_wraps_on_a_torus():
    assert BiasTable().on_torus((True, False)) == BiasTable(wrap=(True, False))
    for code in (ContinuousBias(), Rotary("mixed")):
        with pytest.raises(ValueError, match="only a bias table can do"):
            code.on_torus((True, True))


#: A made-up window code in a file of its own, as a new code is written: the same learned number
#: added to every logit of each head. Nothing else in the package is told about it.
TOY_CODE = """
from dataclasses import dataclass

import torch

from companion.position import PositionTerm, WindowCode, register


class ConstantTerm(PositionTerm):
    checkpoint_prefix = "constant_"
    no_decay = ("value",)

    def __init__(self, num_heads, num_tokens):
        super().__init__()
        self.num_tokens = num_tokens
        self.value = torch.nn.Parameter(torch.ones(num_heads, 1, 1))

    def bias(self):
        return self.value.expand(-1, self.num_tokens, self.num_tokens)

    def resize(self, window_size, method="geometric"):
        self.num_tokens = window_size[0] * window_size[1]


@dataclass(frozen=True)
class ConstantBias(WindowCode):
    color = "#8c564b"

    @property
    def name(self):
        return "constant"

    def build(self, window_size, num_heads, head_dim):
        return ConstantTerm(num_heads, window_size[0] * window_size[1])


register(ConstantBias())
"""


@pytest.fixture
def toy_code(tmp_path, monkeypatch):
    """The module of ``TOY_CODE``, imported from a temporary folder (registered for one test)."""
    monkeypatch.setattr(position_module, "_REGISTRY", dict(position_module._REGISTRY))
    path = tmp_path / "toy_code.py"
    path.write_text(TOY_CODE)
    spec = importlib.util.spec_from_file_location("toy_code", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_new_code_is_one_file_and_trains_with_no_other_change(toy_code, tmp_path, tiny_run):
    assert "constant" in POS_CHOICES and "abs+constant" not in POS_CHOICES
    assert Position.parse("constant") == Position(False, toy_code.ConstantBias())
    torch.manual_seed(0)
    attn = WindowAttention(8, (2, 3), 2, position=toy_code.ConstantBias(), attn_impl="eager")
    assert "constant_value" in attn.state_dict() and "position=ConstantBias()" in repr(attn)
    # A constant added to every logit of a row leaves the softmax unchanged.
    plain = WindowAttention(8, (2, 3), 2, position=None, attn_impl="eager")
    plain.load_state_dict({k: v for k, v in attn.state_dict().items() if k != "constant_value"})
    x = torch.randn(3, 6, 8)
    torch.testing.assert_close(attn(x), plain(x))
    # The trainer takes it by name, and the optimiser's no-decay set asks the code's term.
    result = train(tiny_run(tmp_path, pos="constant", epochs=1))
    assert result.model.config.pos.name == "constant" and len(result.history) == 1
    assert result.model.no_weight_decay() == {
        f"layers.{i}.blocks.{j}.attn.code.value" for i in (0, 1) for j in (0, 1)
    }


@pytest.mark.parametrize("position", [BiasTable(), ContinuousBias(), Rotary("axial"), None])
def test_each_code_moves_itself_to_another_window(position):
    attn = WindowAttention(16, (2, 3), 2, position=position)
    attn.set_window_size((4, 5))
    assert attn.window_size == (4, 5)
    x = torch.randn(2, 20, 16)
    assert attn(x).shape == x.shape
    bias = attn.relative_position_bias()
    assert (bias is None) == (position in (None, Rotary("axial")))
    if bias is not None:
        assert bias.shape == (2, 20, 20)


def test_every_position_a_committed_record_names_parses_and_writes_back_the_same_name():
    root = Path(__file__).resolve().parents[1] / "results"
    named = set()
    for path in root.rglob("*.json"):
        named |= set(re.findall(r'"pos": "([^"]+)"', path.read_text()))
    assert named and named <= set(POS_CHOICES)
    for name in named:
        assert str(Position.parse(name)) == Position.parse(name).name == name


def test_torus_is_part_of_the_position_and_not_of_its_name():
    torus = model_config("tiny-cpu", pos="abs+rel", torus=True).pos
    assert torus == Position(True, BiasTable(), torus=True) and torus.name == "abs+rel"
    assert Position.parse("rel", torus=True) == Position.parse("rel", torus=True)
    assert Position.parse("rel", torus=True) != Position.parse("rel")
    with pytest.raises(ValueError, match=r"torus=True wraps offsets .* got pos='rope-axial'"):
        Position.parse("rope-axial", torus=True)


def test_a_run_holds_one_position_from_the_command_line_to_its_record():
    from companion.train import TrainConfig
    from companion.train.cli import build_parser
    from companion.train.config import config_from_args, recorded_settings

    cfg = config_from_args(build_parser().parse_args(["--pos", "abs+rel", "--variant", "torus"]))
    assert cfg.pos == Position.parse("abs+rel")  # read once, by the flag
    assert TrainConfig(pos="abs+rel", variant="torus") == cfg  # a name is read the same way
    assert recorded_settings(cfg)["pos"] == "abs+rel"  # the record holds the name
    assert build_model(cfg, 10, None).config.pos == Position(True, BiasTable(), torus=True)
