"""Two CPU processes under torchrun (Gloo) train in lockstep and exit cleanly."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_command(out: Path, port: int) -> list[str]:
    """The same CLI as one process, under ``torchrun --nproc_per_node=2`` (the module form of
    ``torchrun``, so it is the one beside this Python)."""
    train = "--config tiny-cpu --dataset relation --pos rel --epochs 1 --train-size 64"
    train += " --test-size 32 --batch-size 16 --no-progress --device cpu --dump-rank-state"
    return [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
        "--master_addr=127.0.0.1", f"--master_port={port}",
        "-m", "companion.train", *train.split(), "--out", str(out),
    ]  # fmt: skip


@pytest.mark.slow
def test_two_gloo_processes_end_with_equal_weights_and_exit_cleanly(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        torchrun_command(tmp_path, free_port()),
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "terminate called" not in proc.stderr
    rank0 = torch.load(tmp_path / "rank0_state.pt", weights_only=True)
    rank1 = torch.load(tmp_path / "rank1_state.pt", weights_only=True)
    assert rank0.keys() == rank1.keys()
    assert all(torch.equal(rank0[k], rank1[k]) for k in rank0)
    # Rank 0 alone logs and writes: one header line, one epoch line, one metrics file.
    assert proc.stdout.count("epoch 1/1") == 1
    assert "2 process(es), 2 steps/epoch" in proc.stdout
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["world_size"] == 2 and len(metrics["epochs"]) == 1
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=True)["world_size"] == 2
