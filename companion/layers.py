"""Small building blocks of a transformer block: stochastic depth (``DropPath``) and the ``Mlp``."""

from __future__ import annotations

from torch import Tensor, nn

from companion._checks import check_positive_int


class DropPath(nn.Module):
    """Stochastic depth: in training, skip a residual branch for a random subset of samples.

    Each sample's branch output is zeroed with probability ``drop_prob`` and otherwise scaled by
    ``1 / (1 - drop_prob)``, so the expected output equals the input and evaluation (which keeps
    every branch) needs no rescaling. Works on any ``(B, ...)`` tensor.
    """

    def __init__(self, drop_prob: float = 0.0) -> None:
        super().__init__()
        if isinstance(drop_prob, bool) or not isinstance(drop_prob, (int, float)):
            raise TypeError(f"drop_prob must be a float in [0, 1), got {drop_prob!r}")
        if not 0.0 <= drop_prob < 1.0:
            raise ValueError(f"drop_prob must be a float in [0, 1), got {drop_prob!r}")
        self.drop_prob = float(drop_prob)

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.drop_prob == 0.0:
            return x
        keep = 1.0 - self.drop_prob
        # One Bernoulli draw per sample, broadcast over all other axes.
        shape = (x.shape[0],) + (1,) * (x.dim() - 1)
        return x * x.new_empty(shape).bernoulli_(keep).div_(keep)

    def extra_repr(self) -> str:
        return f"drop_prob={self.drop_prob}"


class Mlp(nn.Module):
    """The feed-forward half of a transformer block: ``fc2(GELU(fc1(x)))``.

    ``(..., in_features)`` -> ``(..., in_features)`` through ``hidden_features`` channels.
    Submodule names ``fc1``/``fc2`` match timm's, so weights load either way.
    """

    def __init__(self, in_features: int, hidden_features: int) -> None:
        super().__init__()
        check_positive_int("in_features", in_features)
        check_positive_int("hidden_features", hidden_features)
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, in_features)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.act(self.fc1(x)))
