# Source: d2l-ai/d2l-en, chapter_optimization/adam.md (Adam, implementation from scratch) — rebuilt small in our own words  # noqa: E501
"""d2l's Adam by hand: ``adam(params, states, hyperparams)`` of an earlier cell, passed to the
library's ``train_ch11``, which makes ``w`` and ``b`` itself, runs the loop and calls it back
after each backward; ``adam`` writes the moments and the parameters in place (``v[:] =``,
``p[:] -=``) under ``no_grad``, clears ``p.grad.data`` and counts ``hyperparams['t']``. (d2l
passes the states and hyperparameters inline; the cell names them, so they can be compared.)"""

SETUP: tuple[str, ...] = (
    """\
import torch

import d2l_small as d2l

NUM_WORKERS = 0
torch.manual_seed(0)
data_iter, feature_dim = d2l.get_data_ch11(batch_size=10, num_workers=NUM_WORKERS)
""",
    """\
def init_adam_states(feature_dim):
    # first (v) and second (s) moment estimates, for w and for b
    v_w, v_b = torch.zeros((feature_dim, 1)), torch.zeros(1)
    s_w, s_b = torch.zeros((feature_dim, 1)), torch.zeros(1)
    return ((v_w, s_w), (v_b, s_b))


def adam(params, states, hyperparams):
    beta1, beta2, eps = 0.9, 0.999, 1e-6
    for p, (v, s) in zip(params, states):
        with torch.no_grad():
            v[:] = beta1 * v + (1 - beta1) * p.grad
            s[:] = beta2 * s + (1 - beta2) * torch.square(p.grad)
            v_hat = v / (1 - beta1 ** hyperparams["t"])
            s_hat = s / (1 - beta2 ** hyperparams["t"])
            p[:] -= hyperparams["lr"] * v_hat / (torch.sqrt(s_hat) + eps)
        p.grad.data.zero_()
    hyperparams["t"] += 1
""",
)

CELL: str = """\
states = init_adam_states(feature_dim)
hyperparams = {"lr": 0.01, "t": 1}
losses = d2l.train_ch11(adam, states, hyperparams, data_iter, feature_dim)
"""
