"""Where a run computes: device, precision, and the processes of a distributed job."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from companion.train.config import PRECISIONS, parse_device

AMP_DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}
#: The first CUDA compute capability with bfloat16 in hardware (NVIDIA Ampere, sm_80: the A100
#: whitepaper introduced BF16 Tensor Cores). Older GPUs (Colab's T4: 7.5, V100: 7.0) only emulate
#: it, yet ``torch.cuda.is_bf16_supported()`` answers True for them (it counts emulation).
NATIVE_BF16_CAPABILITY = (8, 0)


def native_bf16(device: torch.device) -> bool:
    """Whether ``device`` computes bfloat16 in hardware: a CUDA GPU of compute capability at
    least ``NATIVE_BF16_CAPABILITY``."""
    if device.type != "cuda":
        return False
    return tuple(torch.cuda.get_device_capability(device)) >= NATIVE_BF16_CAPABILITY


def accumulator_dtype(device: torch.device) -> torch.dtype:
    """float64 for the sums of an epoch's losses, except on Apple's MPS, which has no float64
    (a float64 tensor there is an error)."""
    return torch.float32 if device.type == "mps" else torch.float64


def pick_device(name: str = "auto") -> torch.device:
    """``auto`` -> CUDA if available, else MPS if available, else CPU; others are checked."""
    parse_device(name)
    mps = getattr(torch.backends, "mps", None)
    mps_ok = mps is not None and mps.is_available()
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps" if mps_ok else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={name!r} asked for CUDA, but CUDA is not available here")
    if name == "mps" and not mps_ok:
        raise ValueError("device='mps' asked for Apple's MPS, but it is not available here")
    return torch.device(name)


def resolve_precision(requested: str, device_type: str, bf16_native: bool) -> str:
    """``auto`` -> ``bf16`` on a CUDA GPU that computes it in hardware (``native_bf16``), ``fp16``
    on other CUDA GPUs (with loss scaling), ``fp32`` on CPU and MPS. Explicit ``bf16``/``fp16``
    need CUDA, and ``bf16`` a GPU that computes it natively."""
    if requested not in PRECISIONS:
        raise ValueError(f"precision must be one of {list(PRECISIONS)}, got {requested!r}")
    if requested == "auto":
        if device_type != "cuda":
            return "fp32"
        return "bf16" if bf16_native else "fp16"
    if requested != "fp32" and device_type != "cuda":
        raise ValueError(f"precision={requested!r} needs a CUDA device, got {device_type!r}")
    if requested == "bf16" and not bf16_native:
        raise ValueError(
            f"precision='bf16' is only emulated by this GPU (compute capability below "
            f"{NATIVE_BF16_CAPABILITY[0]}.{NATIVE_BF16_CAPABILITY[1]}), slower than fp16; use fp16 "
            f"or auto"
        )
    return requested


@dataclass(frozen=True)
class DistInfo:
    """Where this process sits in a ``torchrun`` job (``world_size == 1``: not distributed)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def dist_info_from_env(env: dict[str, str] | None = None) -> DistInfo:
    """Read ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` as ``torchrun`` sets them."""
    env = dict(os.environ if env is None else env)
    return DistInfo(
        rank=int(env.get("RANK", 0)),
        world_size=int(env.get("WORLD_SIZE", 1)),
        local_rank=int(env.get("LOCAL_RANK", 0)),
    )


def process_device(name: str, info: DistInfo) -> torch.device:
    """The device of this process: under ``torchrun`` each CUDA process takes its local GPU."""
    device = pick_device(name)
    if info.enabled and device.type == "cuda":
        device = torch.device("cuda", info.local_rank)
        torch.cuda.set_device(device)
    return device


def init_distributed(info: DistInfo, device: torch.device) -> None:
    """Join the process group: NCCL for CUDA tensors, Gloo for CPU ones."""
    if not info.enabled:
        return
    if device.type == "cuda":
        dist.init_process_group("nccl", device_id=device)
    elif device.type == "cpu":
        dist.init_process_group("gloo")
    else:
        raise ValueError(f"distributed training needs CUDA or the CPU, got device={device.type!r}")


def shutdown_distributed(clean: bool) -> None:
    """Leave the process group so that every rank exits cleanly.

    Why this order. Gloo runs its collectives on C++ worker threads owned by the process-group
    object. When that object is still alive at interpreter exit, it is destroyed during
    finalisation, together with work objects that hold tensors, and tearing those down then can
    abort the process ("terminate called without an active exception"), at random, depending on
    which rank gets there first. ``destroy_process_group`` frees it only when nothing else holds
    it: a ``DistributedDataParallel`` wrapper sits in a reference cycle whose reducer keeps the
    group alive until the garbage collector happens to run. So:

    1. the trainer's DDP wrapper is gone with the loop that made it; ``gc.collect()`` frees it;
    2. every rank waits at a barrier: after it, no collective is in flight anywhere;
    3. every rank destroys the group, which now really frees it, while Python is fully alive.

    ``companion-train`` then ends a worker that got here with :func:`exit_worker`.

    After an error that not every rank shares (``clean=False``), nothing is attempted: a peer
    may be blocked in a collective that will never complete, so a barrier or a destroy could
    hang; ``torchrun`` stops the other ranks.
    """
    if not dist.is_initialized() or not clean:
        return
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


def all_sum(values: Sequence[float], info: DistInfo, device: torch.device) -> list[float]:
    """Sum numbers over all ranks (identity when not distributed)."""
    if not info.enabled:
        return list(values)
    t = torch.tensor(list(values), dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


def any_rank(flags: torch.Tensor, info: DistInfo) -> list[bool]:
    """Which of ``flags`` (a 1-D bool tensor) is set on at least one rank; one host sync."""
    flags = flags.to(torch.int32)
    if info.enabled:
        dist.all_reduce(flags, op=dist.ReduceOp.MAX)
    return [bool(v) for v in flags.tolist()]


def log(info: DistInfo, message: str) -> None:
    """Print on rank 0 only."""
    if info.is_main:
        print(message, flush=True)


def progress_bar(enabled: bool, desc: str, total: int) -> Any:
    """A tqdm bar advanced by hand (``bar.update(1)``), or ``None`` when switched off.

    It is deliberately not wrapped around the DataLoader: ``tqdm.auto``'s class calls
    ``iter(loader)`` once more on construction, which starts an extra loader iterator (extra
    worker processes, and one more draw from torch's global RNG, so a run with bars would
    differ from one without).
    """
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(desc=desc, total=total, leave=False, dynamic_ncols=True)


def exit_worker(code: int) -> None:
    """End a ``torchrun`` worker that finished cleanly, without the interpreter's finalisation.

    Why. By now :func:`shutdown_distributed` has run: every rank passed the barrier and destroyed
    its process group, and every file is written (atomically, fsynced). What finalisation would
    still do is destroy the rest of torch's C++ state, the distributed runtime's threads among it,
    in an order that varies from run to run; that is where a two-process Gloo run aborted now and
    then with "terminate called without an active exception" even after a clean shutdown (3 in 33
    runs on torch 2.14.1). ``os._exit`` ends the process at the one point where everything is
    known to be done, so the exit no longer depends on that order.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
