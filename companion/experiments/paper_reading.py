"""How the book reads the Swin paper's Table 4 (and ViT's Table 8 and Swin V2's Table 1): the
rules, written once, and the marked gaps.

Table 4 prints one number per row, with no spread and no word on how many training runs each
number is. The book therefore reads it by three
rules (chapters 0, 3 and 5 use them alike; chapter 1 reads ViT's Table 8, which also prints one
number per cell and no spread, by the same rules; so does chapter 6 with Swin V2's Table 1
and RoPE-ViT's Swin-T rows):

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

from companion.experiments.paper import (
    ROPE_VIT_SWIN_SOURCE,
    ROPE_VIT_SWIN_T,
    SWIN_TABLE4,
    SWIN_TABLE4_SOURCE,
    SWINV2_TABLE1,
    SWINV2_TABLE1_SOURCE,
    SWINV2_TABLE1_WINDOWS,
    TABLE4_METRICS,
    VIT_TABLE8,
    VIT_TABLE8_COLUMNS,
    VIT_TABLE8_SOURCE,
)

#: Gaps smaller than this (in points) are printed in parentheses: not read (rule 1 above).
READABLE_GAP = 1.0


def mark_gap(gap: float, readable: float = READABLE_GAP) -> str:
    """``+1.2`` for a gap of at least ``readable`` points, ``(+0.3)`` for a smaller one."""
    text = f"{gap:+.1f}"
    return text if abs(round(gap, 1)) >= readable else f"({text})"


def table4_gap(a: str, b: str, metric: str) -> float:
    """``a - b`` in points for one metric of Table 4, rounded to the table's 0.1."""
    for name, value, allowed in (("a", a, SWIN_TABLE4), ("b", b, SWIN_TABLE4)):
        if value not in allowed:
            raise ValueError(f"{name}: {value!r} is not a row of Table 4 ({list(allowed)})")
    if metric not in TABLE4_METRICS:
        raise ValueError(f"metric: {metric!r} is not one of {list(TABLE4_METRICS)}")
    return round(SWIN_TABLE4[a][metric] - SWIN_TABLE4[b][metric], 1)


def marked_gaps_markdown(pairs: tuple[tuple[str, str], ...]) -> str:
    """Row differences ``a - b`` as a Markdown table, sub-point gaps in parentheses."""
    head = "| difference | " + " | ".join(TABLE4_METRICS.values()) + " |"
    lines = [head, "|---" * (len(TABLE4_METRICS) + 1) + "|"]
    for a, b in pairs:
        cells = [mark_gap(table4_gap(a, b, m)) for m in TABLE4_METRICS]
        lines.append(f"| {a} − {b} | " + " | ".join(cells) + " |")
    note = (
        f"*Points, computed from {SWIN_TABLE4_SOURCE}; one number per row and no spread, so "
        f"gaps below {READABLE_GAP:g} point are in parentheses (not read); compare within a "
        "column only.*"
    )
    return "\n".join(lines) + "\n\n" + note


def vit_table8_gap(row: str, column: str) -> float:
    """One cell of ViT's Table 8 minus its no-embedding cell (Default/Stem), in points of
    accuracy, rounded to 0.1."""
    if row not in VIT_TABLE8:
        raise ValueError(f"row: {row!r} is not a row of Table 8 ({list(VIT_TABLE8)})")
    if column not in VIT_TABLE8_COLUMNS:
        raise ValueError(f"column: {column!r} is not one of {list(VIT_TABLE8_COLUMNS)}")
    value, none = VIT_TABLE8[row][column], VIT_TABLE8["none"]["default"]
    if value is None or none is None:
        raise ValueError(f"column: Table 8 has no value (N/A) for row {row!r} in {column!r}")
    return round(100 * (value - none), 1)


def vit_table8_spread() -> float:
    """Largest minus smallest of Table 8's cells that have a position embedding, in points."""
    values = [v for row, cells in VIT_TABLE8.items() if row != "none" for v in cells.values()]
    present = [v for v in values if v is not None]
    return round(100 * (max(present) - min(present)), 1)


def vit_table8_gaps_markdown() -> str:
    """Table 8's cells minus no embedding, and the spread among the embeddings, marked."""
    lines = [
        "| difference | " + " | ".join(VIT_TABLE8_COLUMNS.values()) + " |",
        "|---" + "|---:" * len(VIT_TABLE8_COLUMNS) + "|",
    ]
    for row, cells in VIT_TABLE8.items():
        if row == "none":
            continue
        marked = [
            mark_gap(vit_table8_gap(row, c)) if v is not None else "N/A" for c, v in cells.items()
        ]
        lines.append(f"| {row} − none | " + " | ".join(marked) + " |")
    spread = mark_gap(vit_table8_spread())
    note = (
        f"*Points of accuracy, each cell minus the no-embedding cell (Default/Stem), computed "
        f"from {VIT_TABLE8_SOURCE}. Largest minus smallest of the "
        f"cells with a position embedding: {spread}. One number per cell and no spread reported, "
        f"so gaps below {READABLE_GAP:g} point are in parentheses (not readable).*"
    )
    return "\n".join(lines) + "\n\n" + note


def swinv2_change(row: str, window: int, fine_tuned: bool = False) -> float:
    """Swin V2's Table 1: ``row``'s ImageNet top-1 at ``window`` (not fine-tuned, or fine-tuned)
    minus its top-1 at the training window 8, in points, rounded to 0.1."""
    if row not in SWINV2_TABLE1:
        raise ValueError(f"row: {row!r} is not a row of Swin V2's Table 1 ({list(SWINV2_TABLE1)})")
    if window not in SWINV2_TABLE1_WINDOWS:
        raise ValueError(f"window: {window!r} is not one of {list(SWINV2_TABLE1_WINDOWS)}")
    cells = SWINV2_TABLE1[row]
    moved = cells[f"imagenet_w{window}_ft" if fine_tuned else f"imagenet_w{window}"]
    return round(moved - cells["imagenet_w8"], 1)


def swinv2_gap(a: str, b: str, column: str) -> float:
    """``a - b`` in points for one column of Swin V2's Table 1, rounded to the table's 0.1."""
    for name, row in (("a", a), ("b", b)):
        if row not in SWINV2_TABLE1:
            raise ValueError(f"{name}: {row!r} is not a row of Swin V2's Table 1")
    if column not in SWINV2_TABLE1[a]:
        raise ValueError(f"column: {column!r} is not one of {list(SWINV2_TABLE1[a])}")
    return round(SWINV2_TABLE1[a][column] - SWINV2_TABLE1[b][column], 1)


def swinv2_table1_reading_markdown() -> str:
    """Table 1's ImageNet columns read by the rules: each row's change from window 8 as the window
    grows (not fine-tuned / fine-tuned), and each continuous bias minus the bias table at the
    same window, sub-point gaps in parentheses."""
    rows, bias_table = list(SWINV2_TABLE1), next(iter(SWINV2_TABLE1))
    windows = SWINV2_TABLE1_WINDOWS
    lines = [
        "| ImageNet top-1, points | " + " | ".join(f"W{w} (no FT / FT)" for w in windows) + " |",
        "|---" + "|---:" * len(windows) + "|",
    ]
    for row in rows:
        cells = [
            f"{mark_gap(swinv2_change(row, w))} / {mark_gap(swinv2_change(row, w, True))}"
            for w in windows
        ]
        lines.append(f"| {row}: change from W8 | " + " | ".join(cells) + " |")
    pairs = [(row, bias_table) for row in rows[1:]] + [(rows[2], rows[1])]
    for a, b in pairs:
        cells = [
            f"{mark_gap(swinv2_gap(a, b, f'imagenet_w{w}'))} / "
            f"{mark_gap(swinv2_gap(a, b, f'imagenet_w{w}_ft'))}"
            for w in windows
        ]
        lines.append(f"| {a} − {b} | " + " | ".join(cells) + " |")
    note = (
        f"*Points, computed from {SWINV2_TABLE1_SOURCE}; one number per cell and no spread, so "
        f"gaps below {READABLE_GAP:g} point are in parentheses (not read).*"
    )
    return "\n".join(lines) + "\n\n" + note


def rope_vit_reading_markdown() -> str:
    """RoPE-ViT's Swin-T rows read by the rules: each code's change from 224 to 384 px, and each
    rotary code's change minus the bias table's (``rel``), sub-point gaps in parentheses."""
    change = {pos: m["top1_384"] - m["top1_224"] for pos, m in ROPE_VIT_SWIN_T.items()}
    lines = ["| ImageNet top-1, points | 224 → 384 px |", "|---|---:|"]
    lines += [f"| `{pos}`: change | {mark_gap(c)} |" for pos, c in change.items()]
    lines += [f"| `{pos}` − `rel`: change | {mark_gap(round(c - change['rel'], 1))} |"
              for pos, c in change.items() if pos != "rel"]  # fmt: skip
    note = (
        f"*Points, computed from {ROPE_VIT_SWIN_SOURCE}; one number per cell and no spread, so "
        f"gaps below {READABLE_GAP:g} point are in parentheses (not read).*"
    )
    return "\n".join(lines) + "\n\n" + note
