"""How the book reads a paper's table that prints one number per cell, with no spread and no word
on how many training runs each is (Swin's Table 4 in chapters 0, 3 and 5, ViT's Table 8 in
chapter 1, Swin V2's Table 1 and RoPE-ViT's Swin-T rows in chapter 6): by three rules.

1. A gap below one point is not readable. A table without a spread cannot say how far two runs
   of one model land apart; one point is the line the book draws in advance, below which it reads
   nothing. Such gaps are printed in parentheses.
2. A gap of a point or more is a hint from one printed number per row, not a measured effect.
3. Each column is its own metric on its own scale (top-1 accuracy, box and mask AP, mIoU): gaps
   are compared within a column, never ranked across columns.

Why a row wins (translation invariance, content-based attention, ...) is a hypothesis until it is
measured beside a control; the table itself says which numbers came out, not why.
"""

from __future__ import annotations

from companion.experiments import paper

#: Gaps smaller than this (in points) are printed in parentheses: not read (rule 1 above).
READABLE_GAP = 1.0


def mark_gap(gap: float) -> str:
    """``+1.2`` for a gap of at least :data:`READABLE_GAP` points (at 0.1), else ``(+0.3)``."""
    text = f"{gap:+.1f}"
    return text if abs(round(gap, 1)) >= READABLE_GAP else f"({text})"


def _note(source: str, per: str = "cell") -> str:
    return (
        f"*Points, computed from {source}; one number per {per} and no spread, so "
        f"gaps below {READABLE_GAP:g} point are in parentheses (not read)"
    )


def marked_gaps_markdown(pairs: tuple[tuple[str, str], ...]) -> str:
    """Row differences ``a - b`` of Table 4 as a Markdown table, marked."""
    table, rows = paper.SWIN_TABLE4, []
    for a, b in pairs:
        for name, row in (("a", a), ("b", b)):
            if row not in table:
                raise ValueError(f"{name}: {row!r} is not a row of Table 4 ({list(table)})")
        gaps = [mark_gap(table[a][m] - table[b][m]) for m in paper.TABLE4_METRICS]
        rows.append((f"{a} − {b}", *gaps))
    note = _note(paper.SWIN_TABLE4_SOURCE, "row") + "; compare within a column only.*"
    head = ["difference", *paper.TABLE4_METRICS.values()]
    return paper.markdown_table(head, rows, note, "l" * len(head))


def vit_table8_gaps_markdown() -> str:
    """Table 8's cells minus its no-embedding cell and the spread of those with one, marked."""
    none = paper.VIT_TABLE8["none"]["default"]
    assert none is not None  # the paper's one cell without an embedding
    embedded = {row: cells for row, cells in paper.VIT_TABLE8.items() if row != "none"}
    rows = []
    for row, cells in embedded.items():
        gaps = [mark_gap(100 * (v - none)) if v is not None else "N/A" for v in cells.values()]
        rows.append((f"{row} − none", *gaps))
    present = [v for cells in embedded.values() for v in cells.values() if v is not None]
    note = (
        f"*Points of accuracy, each cell minus the no-embedding cell (Default/Stem), computed "
        f"from {paper.VIT_TABLE8_SOURCE}. Largest minus smallest of the cells with a position "
        f"embedding: {mark_gap(100 * (max(present) - min(present)))}. One number per cell and "
        f"no spread reported, so gaps below {READABLE_GAP:g} point are in parentheses (not "
        "readable).*"
    )
    return paper.markdown_table(["difference", *paper.VIT_TABLE8_COLUMNS.values()], rows, note)


def swinv2_table1_reading_markdown() -> str:
    """Table 1's ImageNet columns: each row's change from window 8 (no FT / FT) and each
    continuous bias minus the bias table at the same window, marked."""
    names, windows = list(paper.SWINV2_TABLE1), paper.SWINV2_TABLE1_WINDOWS

    def cells(a: dict[str, float], b: dict[str, float] | None) -> list[str]:
        """``a`` at each larger window minus ``b`` there, or minus ``a`` at window 8 (None)."""
        columns = [(f"imagenet_w{w}", f"imagenet_w{w}_ft") for w in windows]
        base = {c: a["imagenet_w8"] if b is None else b[c] for pair in columns for c in pair}
        return [" / ".join(mark_gap(a[c] - base[c]) for c in pair) for pair in columns]

    rows = [(f"{row}: change from W8", *cells(paper.SWINV2_TABLE1[row], None)) for row in names]
    for a, b in [(row, names[0]) for row in names[1:]] + [(names[2], names[1])]:
        rows.append((f"{a} − {b}", *cells(paper.SWINV2_TABLE1[a], paper.SWINV2_TABLE1[b])))
    head = ["ImageNet top-1, points", *(f"W{w} (no FT / FT)" for w in windows)]
    return paper.markdown_table(head, rows, _note(paper.SWINV2_TABLE1_SOURCE) + ".*")


def rope_vit_reading_markdown() -> str:
    """RoPE-ViT's Swin-T rows: each code's change from 224 to 384 px and minus ``rel``'s, marked."""
    change = {pos: m["top1_384"] - m["top1_224"] for pos, m in paper.ROPE_VIT_SWIN_T.items()}
    rows = [(f"`{pos}`: change", mark_gap(c)) for pos, c in change.items()]
    others = {pos: c - change["rel"] for pos, c in change.items() if pos != "rel"}
    rows += [(f"`{pos}` − `rel`: change", mark_gap(c)) for pos, c in others.items()]
    head = ["ImageNet top-1, points", "224 → 384 px"]
    return paper.markdown_table(head, rows, _note(paper.ROPE_VIT_SWIN_SOURCE) + ".*")
