"""Published numbers the book compares against, typed in once with their sources (Swin's Table 4,
ViT's Table 8, Swin V2's Table 1, RoPE-ViT's Swin-T rows): the papers' results, not runs of ours."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def markdown_table(
    head: Sequence[str], rows: Iterable[Sequence[object]], note: str = "", align: str = ""
) -> str:
    """A Markdown table with ``note`` as a paragraph below; ``align``: ``l`` or ``r`` per column."""
    align = align or "l" + "r" * (len(head) - 1)
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "".join("---:|" if a == "r" else "---|" for a in align),
    ]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + (f"\n\n{note}" if note else "")


SWIN_TABLE4_SOURCE = "Liu et al. 2021, Swin Transformer, arXiv:2103.14030, Table 4 (Swin-T)"

#: Table 4's metrics with the names the book prints.
TABLE4_METRICS: dict[str, str] = {
    "imagenet_top1": "ImageNet top-1",
    "imagenet_top5": "ImageNet top-5",
    "coco_ap_box": "COCO AP box",
    "coco_ap_mask": "COCO AP mask",
    "ade20k_miou": "ADE20K mIoU",
}
#: position encoding -> metric -> value, in the paper's row order.
SWIN_TABLE4: dict[str, dict[str, float]] = {
    row: dict(zip(TABLE4_METRICS, values, strict=True))
    for row, values in (
        ("none", (80.1, 94.9, 49.2, 42.6, 43.8)),
        ("absolute", (80.5, 95.2, 49.0, 42.4, 43.2)),
        ("absolute + relative", (81.3, 95.6, 50.2, 43.4, 44.0)),
        ("relative w/o app.", (79.3, 94.7, 48.2, 41.9, 44.1)),
        ("relative (default)", (81.3, 95.6, 50.5, 43.7, 46.1)),
    )
}

#: The book's ``pos`` switch (``companion.swin``) -> the paper's row with the same encoding.
POS_TO_TABLE4_ROW: dict[str, str] = {
    "none": "none",
    "abs": "absolute",
    "abs+rel": "absolute + relative",
    "rel": "relative (default)",
}


def swin_table4_markdown() -> str:
    """Table 4 as a Markdown table (for display in a notebook with ``IPython.display.Markdown``)."""
    head = ["position encoding", "ImageNet top-1 / top-5", "COCO AP box / mask", "ADE20K mIoU"]
    rows = []
    for row, m in SWIN_TABLE4.items():
        coco = f"{m['coco_ap_box']} / {m['coco_ap_mask']}"
        rows.append((row, f"{m['imagenet_top1']} / {m['imagenet_top5']}", coco, m["ade20k_miou"]))
    return markdown_table(head, rows, f"*Source: {SWIN_TABLE4_SOURCE}.*", "llll")


ROPE_VIT_SWIN_SOURCE = (
    "Heo et al. 2024, Rotary Position Embedding for Vision Transformer (ECCV 2024); "
    "naver-ai/rope-vit README, table 'Swin Transformer (300 epochs)', Swin-T rows"
)

#: pos -> ImageNet-1k top-1 of Swin-T trained at 224 px, tested at 224 and 384 px (no fine-tuning).
ROPE_VIT_SWIN_T: dict[str, dict[str, float]] = {
    "rel": {"top1_224": 81.2, "top1_384": 78.9},
    "rope-axial": {"top1_224": 81.3, "top1_384": 79.2},
    "rope-mixed": {"top1_224": 81.4, "top1_384": 79.5},
}


def rope_vit_swin_markdown() -> str:
    """``ROPE_VIT_SWIN_T`` as a Markdown table with the drop from 224 to 384 px and the source."""
    head = ["position code", "top-1 at 224 px", "top-1 at 384 px", "change"]
    rows = []
    for pos, m in ROPE_VIT_SWIN_T.items():
        change = m["top1_384"] - m["top1_224"]
        rows.append((f"`{pos}`", f"{m['top1_224']:.1f}", f"{m['top1_384']:.1f}", f"{change:+.1f}"))
    return markdown_table(head, rows, f"*Source: {ROPE_VIT_SWIN_SOURCE}.*")


#: The differences between Table 4's rows that chapter 5 discusses: ``(a, b)`` reads "a - b".
TABLE4_GAPS: tuple[tuple[str, str], ...] = (
    ("relative (default)", "absolute"),
    ("relative (default)", "none"),
    ("absolute", "none"),
    ("absolute + relative", "absolute"),
    ("relative (default)", "relative w/o app."),
)


VIT_TABLE8_SOURCE = (
    "Dosovitskiy et al. 2021, An Image is Worth 16x16 Words (ICLR 2021), arXiv:2010.11929, "
    "Appendix D.4, Table 8 (ViT-B/16, ImageNet 5-shot linear accuracy)"
)

#: Where the embedding is added, the book's name -> Table 8's column heading.
VIT_TABLE8_COLUMNS: dict[str, str] = {
    "default": "Default/Stem",
    "every layer": "Every Layer",
    "every layer, shared": "Every Layer-Shared",
}

#: position embedding -> where it is added -> ImageNet 5-shot linear accuracy as the paper prints
#: it (``None``: "N/A"). Rows: none (a bag of patches), 1-D (raster order, ViT's default), 2-D (an
#: x and a y table of D/2 channels each), relative (1-D, a bias per offset p_q - p_k).
VIT_TABLE8: dict[str, dict[str, float | None]] = {
    "none": {"default": 0.61382, "every layer": None, "every layer, shared": None},
    "1-D": {"default": 0.64206, "every layer": 0.63964, "every layer, shared": 0.64292},
    "2-D": {"default": 0.64001, "every layer": 0.64046, "every layer, shared": 0.64022},
    "relative (1-D)": {"default": 0.64032, "every layer": None, "every layer, shared": None},
}


def vit_table8_markdown() -> str:
    """Table 8 as a Markdown table, values as the paper prints them, with the source."""
    rows = [
        (row, *(f"{v:.5f}" if v is not None else "N/A" for v in cells.values()))
        for row, cells in VIT_TABLE8.items()
    ]
    head = ["position embedding", *VIT_TABLE8_COLUMNS.values()]
    return markdown_table(head, rows, f"*Source: {VIT_TABLE8_SOURCE}.*")


SWINV2_TABLE1_SOURCE = (
    "Liu et al. 2022, Swin Transformer V2: Scaling Up Capacity and Resolution (CVPR 2022), "
    "arXiv:2111.09883, Table 1 (Swin-T)"
)
#: The larger ImageNet windows of Table 1, in the paper's order.
SWINV2_TABLE1_WINDOWS = (12, 16, 20, 24)
#: Table 1's columns: ``imagenet_w8``, trained on ImageNet-1K at 256 px with window 8;
#: ``imagenet_wN``, tested at window N (32N px) without fine-tuning (``_ft``: with); COCO (box AP)
#: and ADE20K (mIoU), fine-tunes of the same models at the window named.
SWINV2_TABLE1_COLUMNS = (
    "imagenet_w8",
    *(f"imagenet_w{w}{ft}" for w in SWINV2_TABLE1_WINDOWS for ft in ("", "_ft")),
    *("coco_w16", "coco_w32", "ade20k_w16", "ade20k_w20", "ade20k_w32"),
)
#: position bias -> column -> value (the bracketed gains follow from these and are left out). Read
#: from three text conversions of arXiv:2111.09883 (two Markdown renderings of Table 1 and the
#: LaTeX ``tab:lcpb``), which agree on every cell; not the paper's PDF: check it before quoting.
SWINV2_TABLE1: dict[str, dict[str, float]] = {
    row: dict(zip(SWINV2_TABLE1_COLUMNS, values, strict=True))
    for row, values in zip(
        ("parameterized bias table (Swin V1)", "linear-spaced CPB", "log-spaced CPB"),
        [
            (81.7, 79.4, 82.7, 77.2, 83.0, 73.2, 83.2, 68.7, 83.2, 50.8, 50.9, 45.5, 45.8, 44.5),
            (81.7, 82.0, 82.9, 81.2, 83.3, 79.8, 83.6, 77.6, 83.7, 50.9, 51.7, 47.0, 47.4, 47.2),
            (81.8, 82.4, 83.2, 81.7, 83.8, 80.4, 84.0, 79.1, 84.2, 51.1, 51.8, 47.0, 47.7, 47.8),
        ],
        strict=True,
    )
}
#: The book's ``pos`` -> Table 1's row with the same kind of bias (``cpb`` is log-spaced).
POS_TO_SWINV2_ROW: dict[str, str] = {
    "rel": "parameterized bias table (Swin V1)",
    "cpb": "log-spaced CPB",
}
#: Section 4.3 quotes the log-spaced CPB at window 24 (no fine-tuning) as 78.9 %; Table 1 prints
#: 79.1. The book reads the table and reports the mismatch.
SWINV2_TEXT_LOG_CPB_W24 = 78.9


def swinv2_table1_markdown() -> str:
    """Table 1 as the paper lays it out ("no FT / FT" per window), with the source."""
    windows = SWINV2_TABLE1_WINDOWS
    head = ["position bias", "trained W8", *(f"W{w} (no FT / FT)" for w in windows)]
    head += ["COCO AP box W16 / W32", "ADE20K mIoU W16 / W20 / W32"]
    rows = []
    for row, m in SWINV2_TABLE1.items():
        imagenet = [f"{m[f'imagenet_w{w}']} / {m[f'imagenet_w{w}_ft']}" for w in windows]
        coco, ade = f"{m['coco_w16']} / {m['coco_w32']}", f"{m['ade20k_w16']} / {m['ade20k_w20']}"
        rows.append((row, m["imagenet_w8"], *imagenet, coco, f"{ade} / {m['ade20k_w32']}"))
    read_from = "three text conversions of arXiv:2111.09883 (Table 1, and the LaTeX source's "
    read_from += "tab:lcpb), which agree; not the paper's PDF"
    return markdown_table(head, rows, f"*Source: {SWINV2_TABLE1_SOURCE}; read from {read_from}.*")
