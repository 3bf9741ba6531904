# Source: d2l-ai/d2l-en, chapter_optimization/momentum.md (Momentum, implementation from scratch) — rebuilt small in our own words  # noqa: E501
"""d2l's momentum by hand, three calls deep: the cell calls ``train_momentum`` (an earlier
cell's), which calls the library's ``train_ch11`` with fresh velocity states, whose loop calls
back ``sgd_momentum`` (an earlier cell's) after each backward; it updates the velocity and the
parameter in place under ``no_grad`` and clears ``p.grad.data``."""

SETUP: tuple[str, ...] = (
    """\
import torch

import d2l_small as d2l

NUM_WORKERS = 0
torch.manual_seed(0)
data_iter, feature_dim = d2l.get_data_ch11(batch_size=10, num_workers=NUM_WORKERS)
""",
    """\
def init_momentum_states(feature_dim):
    # one velocity per parameter, shaped like it
    return (torch.zeros((feature_dim, 1)), torch.zeros(1))


def sgd_momentum(params, states, hyperparams):
    for p, v in zip(params, states):
        with torch.no_grad():
            v[:] = hyperparams["momentum"] * v + p.grad
            p[:] -= hyperparams["lr"] * v
        p.grad.data.zero_()


def train_momentum(lr, momentum, num_epochs=2):
    return d2l.train_ch11(
        sgd_momentum,
        init_momentum_states(feature_dim),
        {"lr": lr, "momentum": momentum},
        data_iter,
        feature_dim,
        num_epochs,
    )
""",
)

CELL: str = """\
losses = train_momentum(0.02, 0.5)
"""
