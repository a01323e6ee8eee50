"""Time companion's Swin against timm's at the same configuration, alternating the two.

    .venv/bin/python benchmarks/bench_swin.py --config cifar --batch-size 16 --iters 10
    .venv/bin/python benchmarks/bench_swin.py --device cuda --dtype bfloat16 --out results.json

Both models get identical weights (timm's are loaded into companion's). Each measured round times
one training step (forward, cross-entropy, backward, AdamW step) or one inference forward of each
model back to back, swapping which goes first every round, so that a slow moment of a shared
machine hits both models alike.

The table reports the median images/s over rounds, per second of wall-clock time and per second
of CPU time used by this process (steadier when other jobs share the CPU; on a GPU it mostly
measures launch overhead). The companion / timm ratio is the median over rounds of the two
models' time ratio within a round.
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from companion._io import atomic_write_json
from companion.swin import swin_from_config
from companion.swin_configs import CONFIGS

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def build_models(
    config: str, device: torch.device, attn_impl: str = "sdpa"
) -> tuple[nn.Module, nn.Module]:
    """companion's and timm's Swin for ``CONFIGS[config]``, with the same weights."""
    from timm.models.swin_transformer import SwinTransformer as TimmSwin

    torch.manual_seed(0)
    ours = swin_from_config(config, attn_impl=attn_impl)
    theirs = TimmSwin(**CONFIGS[config])
    ours.load_state_dict(theirs.state_dict(), strict=True)
    return ours.to(device), theirs.to(device)


def _autocast(device: torch.device, dtype: torch.dtype) -> contextlib.AbstractContextManager:
    if dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def make_steps(
    model: nn.Module, images: torch.Tensor, labels: torch.Tensor, dtype: torch.dtype
) -> tuple[Callable[[], None], Callable[[], None]]:
    """A training step and an inference step of ``model`` on one fixed batch."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.05)

    def train_step() -> None:
        model.train()
        with _autocast(images.device, dtype):
            loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def infer_step() -> None:
        model.eval()
        with torch.inference_mode(), _autocast(images.device, dtype):
            model(images)

    return train_step, infer_step


def _timed(step: Callable[[], None], device: torch.device) -> tuple[float, float]:
    """Wall-clock and process CPU seconds of one call of ``step``."""
    _sync(device)
    wall, cpu = time.perf_counter(), time.process_time()
    step()
    _sync(device)
    return time.perf_counter() - wall, time.process_time() - cpu


def alternate(
    steps: dict[str, Callable[[], None]], warmup: int, iters: int, device: torch.device
) -> dict[str, list[tuple[float, float]]]:
    """Run every step ``warmup`` times, then ``iters`` timed rounds, rotating the order each round.

    Returns ``(wall, cpu)`` seconds of each timed call, per name.
    """
    names = list(steps)
    for _ in range(warmup):
        for name in names:
            steps[name]()
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for i in range(iters):
        order = names[i % len(names) :] + names[: i % len(names)]
        for name in order:
            times[name].append(_timed(steps[name], device))
    return times


def hardware_labels(device: torch.device) -> dict[str, str | int]:
    """What the numbers were measured on."""
    labels: dict[str, str | int] = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": _cpu_name(),
        "torch_threads": torch.get_num_threads(),
        "device": str(device),
    }
    with contextlib.suppress(ImportError):
        import timm

        labels["timm"] = timm.__version__
    if device.type == "cuda":
        labels["gpu"] = torch.cuda.get_device_name(device)
    return labels


def _cpu_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def run(
    config: str,
    batch_size: int,
    iters: int,
    warmup: int,
    device: torch.device,
    dtype: torch.dtype,
    attn_impl: str = "sdpa",
) -> dict:
    """Build both models, time both modes, and return the report (see ``format_table``)."""
    ours, theirs = build_models(config, device, attn_impl)
    cfg = CONFIGS[config]
    size = cfg["img_size"] if isinstance(cfg["img_size"], tuple) else (cfg["img_size"],) * 2
    gen = torch.Generator().manual_seed(0)
    images = torch.randn(batch_size, 3, *size, generator=gen).to(device)
    labels = torch.randint(0, cfg["num_classes"], (batch_size,), generator=gen).to(device)
    results: dict[str, dict[str, float]] = {}
    ratios: dict[str, float] = {}
    for mode in ("train", "infer"):
        steps = {}
        for name, model in (("companion", ours), ("timm", theirs)):
            train_step, infer_step = make_steps(model, images, labels, dtype)
            steps[name] = train_step if mode == "train" else infer_step
        times = alternate(steps, warmup, iters, device)
        for clock, kind in ((0, "s"), (1, "cpu_s")):
            key = f"{mode}_images_per_{kind}"
            for name, pairs in times.items():
                seconds = statistics.median(pair[clock] for pair in pairs)
                results.setdefault(name, {})[key] = batch_size / max(seconds, 1e-9)
            # Paired: the two models' times from the same round, so a slow moment of the machine
            # cancels out; the median over rounds then drops the rounds it did not cancel.
            ratios[key] = statistics.median(
                t[clock] / max(c[clock], 1e-9)
                for c, t in zip(times["companion"], times["timm"], strict=True)
            )
    return {
        "config": config,
        "batch_size": batch_size,
        "iters": iters,
        "warmup": warmup,
        "dtype": str(dtype).removeprefix("torch."),
        "attn_impl": attn_impl,
        "results": results,
        "ratio_companion_over_timm": ratios,
        "hardware": hardware_labels(device),
    }


COLUMNS = (
    ("train img/s", "train_images_per_s"),
    ("infer img/s", "infer_images_per_s"),
    ("train img/cpu-s", "train_images_per_cpu_s"),
    ("infer img/cpu-s", "infer_images_per_cpu_s"),
)


def format_table(report: dict) -> str:
    """The report as an aligned table: one row per model, then the companion / timm ratios."""
    rows = [f"{'model':<10}" + "".join(f" {title:>16}" for title, _ in COLUMNS)]
    for name, r in report["results"].items():
        rows.append(f"{name:<10}" + "".join(f" {r[key]:>16.1f}" for _, key in COLUMNS))
    ratio = report["ratio_companion_over_timm"]
    rows.append(
        f"{'ratio':<10}"
        + "".join(f" {ratio[key]:>16.3f}" for _, key in COLUMNS)
        + "   (companion / timm)"
    )
    hw = report["hardware"]
    rows.append(
        f"config={report['config']} batch={report['batch_size']} iters={report['iters']} "
        f"dtype={report['dtype']} attn_impl={report['attn_impl']} device={hw['device']} "
        f"threads={hw['torch_threads']} "
        f"torch={hw['torch']}"
    )
    return "\n".join(rows)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--config", default="cifar", choices=sorted(CONFIGS))
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--iters", type=int, default=10, help="timed rounds per mode")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument(
        "--dtype",
        default="float32",
        choices=sorted(DTYPES),
        help="bfloat16 runs the models under torch.autocast",
    )
    p.add_argument(
        "--attn-impl",
        default="sdpa",
        choices=("sdpa", "eager"),
        help="companion's attention implementation (timm's is its default)",
    )
    p.add_argument("--out", type=Path, help="also write the results as JSON here")
    args = p.parse_args(argv)
    for name in ("batch_size", "iters"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.warmup < 0:
        p.error(f"--warmup must be >= 0, got {args.warmup}")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = _parse(argv)
    report = run(
        args.config,
        args.batch_size,
        args.iters,
        args.warmup,
        torch.device(args.device),
        DTYPES[args.dtype],
        args.attn_impl,
    )
    print(format_table(report))
    if args.out is not None:
        atomic_write_json(args.out, report)
        print(f"wrote {args.out}")
    return report


if __name__ == "__main__":
    main()
