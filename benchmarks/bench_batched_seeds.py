"""Would training several seeds as one batched model make chapter 5's ablation cheaper here?

    .venv/bin/python benchmarks/bench_batched_seeds.py --seeds 5 --iters 20 --out report.json

A remedy for the ablation's budget: stack the seeds' models
(``torch.func.stack_module_state``) and run one step of all of them at once under ``vmap``
(``torch.func.functional_call``), so that each operator is launched once per step for every seed
instead of once per seed. This measures what that buys on this machine before any trainer is
built on it: one training step (forward, cross-entropy, backward) of ``seeds`` tiny-cpu models, each
on its own batch of 16 images, done

* ``separate``: one model after the other, as the ablation runs them today (``attn_impl`` "sdpa");
* ``separate-eager``: the same with the spelled-out attention (``attn_impl`` "eager");
* ``vmap``: all of them in one ``vmap`` call (eager attention: under ``vmap`` PyTorch's fused CPU
  attention cannot take a bias that needs a gradient, which every relative-bias model has).

Rounds alternate the three, so a busy moment of a shared machine hits each alike. Before timing,
the vmapped gradients are checked against the separate models' (same weights, same batches) to
float tolerance, so the speed compared is that of the same computation. The report gives the
median step time of each and the speed-up of ``vmap`` over ``separate`` (above 1: faster).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from bench_swin import hardware_labels
from torch import Tensor, nn
from torch.func import functional_call, stack_module_state, vmap

from companion._io import atomic_write_json
from companion.swin import swin_from_config


def build(pos: str, seeds: int, attn_impl: str) -> list[nn.Module]:
    """``seeds`` tiny-cpu models of ``pos`` (4 classes), model ``s`` initialised after
    ``manual_seed(s)``."""
    models = []
    for seed in range(seeds):
        torch.manual_seed(seed)
        models.append(swin_from_config("tiny-cpu", num_classes=4, pos=pos, attn_impl=attn_impl))
    return models


def separate_step(models: list[nn.Module], x: Tensor, y: Tensor) -> list[list[Tensor]]:
    """One step of each model on its own batch ``x[s]``: the gradients, model by model."""
    grads = []
    for model, xs, ys in zip(models, x, y, strict=True):
        model.zero_grad(set_to_none=True)
        F.cross_entropy(model(xs), ys).backward()
        grads.append([p.grad for p in model.parameters()])
    return grads


def vmapped_step(models: list[nn.Module]) -> Callable[[Tensor, Tensor], dict[str, Tensor]]:
    """One step of all ``models`` at once: ``(x (S, B, 3, H, W), y (S, B)) -> {name: (S, ...)}``."""
    params, buffers = stack_module_state(models)
    params = {k: v.detach().requires_grad_() for k, v in params.items()}
    base = copy.deepcopy(models[0]).to("meta")

    def loss(p: dict[str, Tensor], b: dict[str, Tensor], xs: Tensor, ys: Tensor) -> Tensor:
        return F.cross_entropy(functional_call(base, (p, b), (xs,)), ys)

    def step(x: Tensor, y: Tensor) -> dict[str, Tensor]:
        # The sum of the seeds' losses: each seed's gradient is that of its own loss.
        total = vmap(loss)(params, buffers, x, y).sum()
        return dict(zip(params, torch.autograd.grad(total, list(params.values())), strict=True))

    return step


def check_same_gradients(pos: str, seeds: int, x: Tensor, y: Tensor) -> float:
    """The largest absolute difference between the vmapped and the separate gradients."""
    models = build(pos, seeds, "eager")
    separate = separate_step(models, x, y)
    batched = vmapped_step(models)(x, y)
    names = [name for name, _ in models[0].named_parameters()]
    return max(
        float((batched[name][s] - separate[s][i]).abs().max())
        for s in range(seeds)
        for i, name in enumerate(names)
    )


def run(pos: str, seeds: int, iters: int, warmup: int) -> dict:
    """Median step time of the three ways for ``pos``, and the gradient check."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(seeds, 16, 3, 32, 32, generator=g)
    y = torch.randint(0, 4, (seeds, 16), generator=g)
    error = check_same_gradients(pos, seeds, x, y)
    sdpa, eager = build(pos, seeds, "sdpa"), build(pos, seeds, "eager")
    batched = vmapped_step(build(pos, seeds, "eager"))
    ways: dict[str, Callable[[], object]] = {
        "separate": lambda: separate_step(sdpa, x, y),
        "separate-eager": lambda: separate_step(eager, x, y),
        "vmap": lambda: batched(x, y),
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    for i in range(warmup + iters):
        order = list(ways) if i % 2 == 0 else list(reversed(ways))
        for name in order:
            start = time.perf_counter()
            ways[name]()
            if i >= warmup:
                times[name].append(time.perf_counter() - start)
    median = {name: statistics.median(t) for name, t in times.items()}
    return {
        "pos": pos,
        "seeds": seeds,
        "max_gradient_difference": error,
        "median_step_s": median,
        "vmap_speedup": median["separate"] / median["vmap"],
    }


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pos", nargs="+", default=["none", "abs", "rel", "cpb", "rope-mixed"])
    p.add_argument("--seeds", type=int, default=5, help="models stacked (default 5)")
    p.add_argument("--iters", type=int, default=20, help="timed rounds (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed rounds first (default 3)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1, as the "
                   "ablation runs each run)")  # fmt: skip
    p.add_argument("--out", help="also write the report as JSON (atomically)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    report = {
        "hardware": {**hardware_labels(torch.device("cpu")), "threads": args.threads},
        "rows": [run(pos, args.seeds, args.iters, args.warmup) for pos in args.pos],
    }
    print(
        f"{'pos':<11}{'separate':>10}{'sep-eager':>11}{'vmap':>9}{'speed-up':>10}  max |grad diff|"
    )
    for row in report["rows"]:
        m = row["median_step_s"]
        print(
            f"{row['pos']:<11}{1000 * m['separate']:>8.1f}ms{1000 * m['separate-eager']:>9.1f}ms"
            f"{1000 * m['vmap']:>7.1f}ms{row['vmap_speedup']:>10.2f}  "
            f"{row['max_gradient_difference']:.1e}"
        )
    if args.out:
        atomic_write_json(args.out, report)
    return report


if __name__ == "__main__":
    main()
