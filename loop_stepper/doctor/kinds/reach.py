"""What a backward reaches (``doctor/reach.py``): the same loss twice, a graph through a module
in eval mode, an eval forward's graph no backward used, loss graphs kept across iterations,
parameters no optimizer holds, float16 without a scaler."""

from __future__ import annotations

from loop_stepper.doctor.kinds.kind import Kind

FAMILY = "reach"

BACKWARD_TWICE_RETAIN = Kind(
    "backward_twice_retain",
    FAMILY,
    "the same loss backpropagated twice with `retain_graph=True`: its gradient added twice",
    """
    loss.backward(retain_graph=True)
    loss.backward()              # the same gradient, added again
    optimizer.step()
    """,
    "call backward() once per loss",
    "the same loss was backpropagated twice (retain_graph=True kept its graph), so its gradient "
    "was added into .grad twice",
)
EVAL_WHILE_TRAINING = Kind(
    "eval_while_training",
    FAMILY,
    "a training `backward()` through a module in eval mode whose mode changes that forward's "
    "numbers, by its type and settings: dropout with p > 0, a norm layer tracking running "
    "statistics, a stacked RNN/LSTM/GRU with dropout > 0, attention with dropout, RReLU, a "
    "module of the user's whose forward reads `self.training`",
    """
    model.eval()                 # left from the validation
    for x, y in batches:
        loss = F.cross_entropy(model(x), y)
        loss.backward()          # dropout off, BatchNorm frozen
        optimizer.step()
    """,
    "call model.train() before the training forward",
    "a training backward() ran through {modules} in eval mode, where the mode changes the "
    "numbers (dropout off, BatchNorm's running statistics used and never updated)",
)
VALIDATION_WITH_GRAD = Kind(
    "validation_with_grad",
    FAMILY,
    "an eval-mode forward built a graph no `backward()` used; named in the function that "
    "called `eval()` (the validation code), not in a helper the training shares",
    """
    model.eval()
    val_loss = F.cross_entropy(model(x_val), y_val)   # builds a graph nobody uses
    """,
    "run validation under torch.no_grad() or torch.inference_mode()",
    "a forward pass in eval mode built an autograd graph that no backward() used ({nodes} "
    "nodes kept alive while it is held)",
)
LOG_TENSOR = Kind(
    "log_tensor",
    FAMILY,
    "a name, an attribute of the user's object (`self.history`, a meter's `sum`) or a list or "
    "dict they hold keeps the loss graphs of more iterations at each look; one iteration's "
    "graph reassigned every iteration is not named",
    """
    total = 0
    for x, y in batches:
        loss = F.mse_loss(model(x), y)
        ...
        total += loss            # keeps every iteration's graph
    """,
    "add loss.item(), a Python float",
    "{name} keeps the loss tensor and its autograd graph across iterations ({graphs} graphs, "
    "{nodes} nodes so far, growing every iteration)",
)
NOT_IN_OPTIMIZER = Kind(
    "not_in_optimizer",
    FAMILY,
    "a parameter (an `nn.Parameter`, or a tensor a module holds as a plain attribute with "
    "`requires_grad`) got a gradient at two iterations and no optimizer holds it",
    """
    layers = [nn.Linear(4, 4) for _ in range(3)]     # a plain list: not registered
    optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
    """,
    "give the optimizer every parameter it should train (nn.ModuleList, not a plain list; "
    "nn.Parameter for a tensor attribute; the optimizer made after the last layer is "
    "replaced), or freeze what stays fixed (requires_grad_(False))",
    "{params} received a gradient at every iteration but no optimizer holds it{why}, so it "
    "never moves",
)
FLOAT16_WITHOUT_SCALER = Kind(
    "float16_without_scaler",
    FAMILY,
    "a float16 autocast `backward()` with no `GradScaler`",
    """
    with torch.autocast("cuda", dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    loss.backward()              # small gradients underflow to 0
    """,
    "use torch.amp.GradScaler (scaler.scale(loss).backward(), scaler.step(optimizer), "
    "scaler.update()) or bfloat16",
    "backward() ran through a float16 autocast graph without a GradScaler, so small gradients "
    "underflow to 0 silently",
)
