"""What goes into the loss (``doctor/losses.py``): probabilities where a loss takes logits, a
class dimension of one, a term from a parameter's ``.data``."""

from __future__ import annotations

from loop_stepper.doctor.kinds.kind import Kind

FAMILY = "losses"

PROBABILITIES_INTO_LOGITS_LOSS = Kind(
    "probabilities_into_logits_loss",
    FAMILY,
    "`binary_cross_entropy_with_logits` (`nn.BCEWithLogitsLoss`) fed a sigmoid's or a "
    "softmax's output (its graph's last node), so the loss squashes probabilities again: it "
    "has a floor and the predictions stay in (0.5, 0.73)",
    """
    probs = torch.sigmoid(model(x))
    loss = nn.BCEWithLogitsLoss()(probs, y)    # it applies the sigmoid itself
    """,
    "pass the raw logits to BCEWithLogitsLoss (or use BCELoss on the sigmoid's output)",
    "{loss} was fed {fed}'s output (values in [{min}, {max}]), not logits: it applies the "
    "sigmoid again",
)
SIGMOID_BEFORE_CROSS_ENTROPY = Kind(
    "sigmoid_before_cross_entropy",
    FAMILY,
    "`cross_entropy` (`nn.CrossEntropyLoss`) fed a sigmoid's output (its graph's last node): "
    "every logit squashed into (0, 1), the classes barely apart",
    """
    scores = torch.sigmoid(model(x))
    loss = F.cross_entropy(scores, y)          # cross_entropy takes logits
    """,
    "pass the raw logits to cross_entropy",
    "{loss} was fed a sigmoid's output (values in [{min}, {max}]), not logits, so every class "
    "score lies in (0, 1) and the softmax inside can barely tell them apart",
)
SINGLE_CLASS_CROSS_ENTROPY = Kind(
    "single_class_cross_entropy",
    FAMILY,
    "`cross_entropy` over a class dimension of size 1: the softmax of one class is 1, so the "
    "loss and every gradient are exactly 0 from the first step",
    """
    model = nn.Linear(8, 1)                    # one output for two classes
    loss = F.cross_entropy(model(x), y)        # always 0.0
    """,
    "give the model one output per class (nn.Linear(h, 2)), or use BCEWithLogitsLoss on the "
    "single logit with float targets",
    "{loss} was fed logits of shape ({shape}): one class, so the loss is exactly {value} and "
    "no gradient ever reaches the model",
)
LOSS_FROM_DATA = Kind(
    "loss_from_data",
    FAMILY,
    "a number computed from a parameter's `.data` (no graph) added to a one-number loss with "
    "a graph, at a backward where that parameter gets its gradient from the rest of the loss: "
    "the term is in the loss's value and not in its gradient",
    """
    loss = F.cross_entropy(model(x), y) + 0.01 * (model.weight.data ** 2).sum()
    loss.backward()              # the penalty adds nothing to model.weight.grad
    """,
    "compute the term from the parameter itself (model.weight, not model.weight.data)",
    "a term computed from {param}.data ({term}) was added to the loss: its value counts, its "
    "gradient is none, so it changes nothing the step does",
)
