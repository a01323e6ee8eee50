"""Can a switch outside the model make chapter 5's CPU runs cheaper without changing them?

    .venv/bin/python benchmarks/bench_cpu_options.py --epochs 4 --rounds 3 --out report.json

The ablation was to regenerate in about 90 minutes without cutting seeds. The
model, data and schedule fix the arithmetic; this measures the switches that leave them alone,
each on one ablation run (``grid-cell``, ``rel``, seed 1, the plan's settings, one thread,
``epochs`` epochs of the 2000 images):

* ``eager``: the run as the ablation does it (the baseline);
* ``flush-denormal``: ``torch.set_flush_denormal(True)`` (subnormal floats, such as the
  exponentials of the ``-100`` window mask, become zero instead of taking a slow path);
* ``compile``: ``TrainConfig(compile=True)`` (``torch.compile`` of the training model);
* ``jemalloc``: the same process with ``libjemalloc`` preloaded (only where it is installed).

Each option runs in its own process, and rounds alternate their order, so that a busy moment of a
shared machine hits each alike. The report gives each option's median epoch time (the first epoch
left out: it holds ``compile``'s compilation, from an empty cache, which is given separately),
its speed-up over ``eager`` (above 1: faster), and whether the trained weights are bit for bit
``eager``'s (the ablation's records can be reproduced only if they are).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from companion._io import atomic_write_json
from companion.train import TrainConfig, train
from companion.train.provenance import provenance

JEMALLOC = Path("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")
OPTIONS = ("eager", "flush-denormal", "compile", "jemalloc")


def worker(option: str, epochs: int, out: Path) -> dict:
    """Train the benchmark run once under ``option``: epoch times, losses, weights' digest."""
    if option == "flush-denormal":
        torch.set_flush_denormal(True)
    cfg = TrainConfig(
        dataset="grid-cell", pos="rel", seed=1, epochs=epochs, train_size=2000, test_size=1000,
        batch_size=16, lr=1e-3, warmup_epochs=2, label_smoothing=0.0, threads=1, device="cpu",
        compile=option == "compile", progress=False, out=str(out),
    )  # fmt: skip
    result = train(cfg)
    digest = hashlib.sha256()
    for name, tensor in sorted(result.model.state_dict().items()):
        digest.update(name.encode() + tensor.detach().contiguous().numpy().tobytes())
    return {
        "epoch_s": [e["epoch_time_s"] for e in result.history],
        "train_loss": [e["train_loss"] for e in result.history],
        "weights_sha256": digest.hexdigest(),
    }


def run_option(option: str, epochs: int) -> dict:
    env = dict(os.environ)
    if option == "jemalloc":
        env["LD_PRELOAD"] = str(JEMALLOC)
    with tempfile.TemporaryDirectory() as tmp:
        # An empty compile cache: the first epoch pays what a model's first run would pay.
        env["TORCHINDUCTOR_CACHE_DIR"] = str(Path(tmp) / "inductor")
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, __file__, "--worker", option, "--epochs", str(epochs)]
        subprocess.run([*cmd, "--out", str(report)], env=env, check=True, cwd=tmp)
        return json.loads(report.read_text())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--worker", choices=OPTIONS, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        with tempfile.TemporaryDirectory() as run_dir:
            atomic_write_json(args.out, worker(args.worker, args.epochs, Path(run_dir) / "run"))
        return
    # The tree the runs start from (each worker imports companion afresh).
    report: dict = {"provenance": provenance(" ".join(sys.argv)), "threads_per_run": 1}
    options = [o for o in OPTIONS if o != "jemalloc" or JEMALLOC.exists()]
    runs: dict[str, list[dict]] = {o: [] for o in options}
    for r in range(args.rounds):
        for option in options if r % 2 == 0 else options[::-1]:
            runs[option].append(run_option(option, args.epochs))
            print(option, [round(t, 2) for t in runs[option][-1]["epoch_s"]], flush=True)
    base = runs["eager"][0]
    eager_s = statistics.median(t for run in runs["eager"] for t in run["epoch_s"][1:])
    report["epochs"] = args.epochs
    report["rounds"], report["options"] = args.rounds, {}
    report["jemalloc"] = str(JEMALLOC) if JEMALLOC.exists() else "not installed"
    for option, option_runs in runs.items():
        median = statistics.median(t for run in option_runs for t in run["epoch_s"][1:])
        report["options"][option] = {
            "median_epoch_s": median,
            "speedup_over_eager": eager_s / median,
            "first_epoch_s": statistics.median(run["epoch_s"][0] for run in option_runs),
            "epoch_s": [run["epoch_s"] for run in option_runs],  # every run, in round order
            "same_weights_as_eager": all(
                run["weights_sha256"] == base["weights_sha256"] for run in option_runs
            ),
            "same_losses_as_eager": all(
                run["train_loss"] == base["train_loss"] for run in option_runs
            ),
        }
    print(json.dumps(report, indent=1))
    if args.out is not None:
        atomic_write_json(args.out, report)


if __name__ == "__main__":
    main()
