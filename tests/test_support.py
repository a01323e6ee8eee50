"""companion._checks, companion._io and companion.figures.show."""

import json
import os

import pytest

from companion import _io
from companion._checks import check_choice, check_divisible, check_positive_int, to_pair
from companion.figures.show import SourceCode, show_source
from companion.relative import sum_offsets


def test_to_pair_accepts_int_and_pairs():
    assert to_pair("size", 3) == (3, 3)
    assert to_pair("size", (2, 5)) == (2, 5)
    assert to_pair("size", [4, 1]) == (4, 1)


@pytest.mark.parametrize("value", ["ab", (1,), (1, 2, 3), None, 1.5, (1, "2")])
def test_to_pair_rejects_non_int_pairs_with_a_type_error(value):
    with pytest.raises(TypeError, match=r"size must be an int >= 1 or a pair \(h, w\)"):
        to_pair("size", value)


def test_check_positive_int_messages():
    with pytest.raises(ValueError, match="depth must be an int >= 1, got 0"):
        check_positive_int("depth", 0)
    with pytest.raises(TypeError, match=r"depth must be an int >= 1, got '3' \(str\)"):
        check_positive_int("depth", "3")


def test_check_divisible_and_choice_messages():
    with pytest.raises(ValueError, match="dim must be divisible by num_heads=3, got dim=8"):
        check_divisible("dim", 8, "num_heads", 3)
    with pytest.raises(ValueError, match=r"pos must be one of \['a', 'b'\], got 'c'"):
        check_choice("pos", "c", ["a", "b"])


def test_atomic_write_replaces_the_file_in_one_step(tmp_path):
    target = tmp_path / "sub" / "metrics.json"
    _io.atomic_write_json(target, {"b": 1, "a": [1, 2]})
    assert json.loads(target.read_text()) == {"a": [1, 2], "b": 1}
    _io.atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert os.listdir(target.parent) == ["metrics.json"]


def test_atomic_write_gives_ordinary_file_permissions(tmp_path):
    mask = os.umask(0o022)
    try:
        target = _io.atomic_write_text(tmp_path / "results.md", "x")
    finally:
        os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o644


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    target = tmp_path / "checkpoint.bin"
    target.write_bytes(b"good")

    def explode(f):
        f.write(b"half")
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        _io.atomic_write(target, explode)
    assert target.read_bytes() == b"good"
    assert os.listdir(tmp_path) == ["checkpoint.bin"]


def test_show_source_renders_text_and_highlighted_html():
    shown = show_source(sum_offsets)
    assert isinstance(shown, SourceCode)
    assert shown.title == "companion.relative.sum_offsets"
    assert repr(shown).startswith("# companion.relative.sum_offsets\ndef sum_offsets(")
    html = shown._repr_html_()
    assert "companion-source" in html and "sum_offsets" in html
    # one block per source line, each with a hanging indent past its own indentation
    assert html.count("source-line") == len(shown.source.splitlines())
    assert "padding-left:8ch;text-indent:-8ch" in html


def test_show_source_rejects_objects_without_source():
    with pytest.raises(TypeError, match="obj must be a function, class, method or module"):
        show_source(42)


def test_a_folded_listing_is_one_details_element_named_by_its_object():
    folded, open_ = show_source(sum_offsets, folded=True), show_source(sum_offsets)
    html_folded = folded._repr_html_()
    assert html_folded.count("<details") == 1 and "<details open" not in html_folded
    assert "<summary" in html_folded and f"{folded.title} (source)</summary>" in html_folded
    assert "<details" not in open_._repr_html_()
    # The code is the same either way, and the plain-text form does not change.
    assert repr(folded) == repr(open_)
