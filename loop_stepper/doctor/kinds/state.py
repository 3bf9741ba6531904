"""The state around the loop (``doctor/state.py``): probabilities into a loss that takes logits,
an optimizer's state lost on resume or by making it again, the first value that stopped being
finite."""

from __future__ import annotations

from loop_stepper.doctor.kinds.kind import Kind

FAMILY = "state"

SOFTMAX_BEFORE_LOSS = Kind(
    "softmax_before_loss",
    FAMILY,
    "`cross_entropy` / `nll_loss` fed rows in [0, 1] that sum to 1 (a softmax's output), or "
    "`nll_loss` fed `log_softmax` of a softmax's output (the softmax's own numbers are the "
    "evidence), or fed (the log of) a softmax taken over a dimension of size 1 (every value "
    "1.0: `F.softmax` without `dim` takes dim 0 of a 3-D tensor)",
    """
    probs = F.softmax(model(x), dim=1)
    loss = F.cross_entropy(probs, y)     # cross_entropy takes logits
    """,
    "pass the raw logits to cross_entropy (or log_softmax(logits, dim=<the class dimension>) "
    "to nll_loss)",
    "{loss} was fed {fed}",
)
RESUME_WITHOUT_OPTIMIZER = Kind(
    "resume_without_optimizer",
    FAMILY,
    "a stateful optimizer stepped with no state after the model's weights were restored from a "
    "checkpoint holding an optimizer's state (any process's), or in the process whose stateful "
    "optimizer trained them; a new head (a fine-tune) and weights from elsewhere (pretrained) "
    "are not named",
    """
    ckpt = torch.load("ckpt.pt")
    model.load_state_dict(ckpt["model"])
    optimizer = torch.optim.Adam(model.parameters())   # its moments start again
    """,
    "save optimizer.state_dict() in the checkpoint and load it on resume",
    "the model's weights were restored here but the stateful optimizer started again with no "
    "state ({optimizer}: its step count and moments restarted), so the first steps jump",
)
OPTIMIZER_RECREATED = Kind(
    "optimizer_recreated",
    FAMILY,
    "a new optimizer made at the same line over the same parameters, dropping the state of "
    "the one before",
    """
    for x, y in batches:
        optimizer = torch.optim.Adam(model.parameters())   # every iteration
        ...
    """,
    "make the optimizer once, before the loop",
    "a new {optimizer} was made over parameters an earlier one was training, dropping its "
    "state ({lost}) each time",
)
NONFINITE = Kind(
    "nonfinite",
    FAMILY,
    "the first statement where the loss, a gradient or a parameter stopped being finite",
    """
    optimizer = torch.optim.SGD(model.parameters(), lr=1e4)
    ...
    loss.backward()              # the weights blow up to inf, then NaN
    """,
    "lower the lr, clip the gradient or check the data and the loss for log(0) or division by zero",
    "the {store} stopped being finite here ({value}{where})",
)
