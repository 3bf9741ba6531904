"""The lesson's training loop as a student would write it in plain PyTorch, timed: what a served
``run`` is measured against (``bench/server.py``). Imported lazily so a client that does not
time it stays light."""

from __future__ import annotations

import time


def plain_loop(iterations: int) -> tuple[float, float]:
    """The lesson's loop as written, moons, SGD lr 0.3, batches of 32: (seconds, CPU seconds)."""
    import numpy as np
    import torch
    from sklearn.datasets import make_moons
    from sklearn.model_selection import train_test_split
    from torch import nn

    torch.set_num_threads(1)
    x, labels = make_moons(n_samples=200, noise=0.2, random_state=0)
    x_train, _, y_train, _ = train_test_split(
        x, labels, test_size=0.25, stratify=labels, random_state=0
    )
    X, y = torch.tensor(x_train), torch.tensor(y_train)
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2)
    ).double()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.3)
    rng = np.random.default_rng(0)
    t0, c0 = time.perf_counter(), time.process_time()
    done = 0
    while done < iterations:
        order = torch.from_numpy(rng.permutation(150))
        for k in range(0, 150, 32):
            if done == iterations:
                break
            idx = order[k : k + 32]
            out = model(X[idx])
            loss = loss_fn(out, y[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            done += 1
    return time.perf_counter() - t0, time.process_time() - c0
