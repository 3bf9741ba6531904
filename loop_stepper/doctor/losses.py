"""What goes into the loss, read from the tensor fed to it as the probe hands it over
(``cross_entropy``, ``nll_loss``, ``binary_cross_entropy_with_logits``, also through their
``nn`` modules): probabilities where the loss takes logits — a softmax's output or rows in
[0, 1] summing to 1 into ``cross_entropy`` (``softmax_before_loss``), a sigmoid's output into
``cross_entropy`` (``sigmoid_before_cross_entropy``) or into a loss with logits
(``probabilities_into_logits_loss``) — and a class dimension of one
(``single_class_cross_entropy``). Which function made the input is its graph's last node, a
fact of the run, never the source's text; a cheap look at every call, the rows' sums in the
sampled iterations. A term computed from a parameter's ``.data`` (``dotdata.py``): in the
loss's value, not in its gradient (``loss_from_data``)."""

from __future__ import annotations

import torch

from loop_stepper.doctor import graphs
from loop_stepper.doctor.chart import Chart
from loop_stepper.doctor.dotdata import DotData

_SQUASHED = ("Sigmoid", "Softmax")  # the graph's last node of a probability
_TWICE = (
    "probabilities (every row sums to 1, values in [0, 1]), a softmax's output, so the softmax "
    "is applied twice and training crawls"
)


class Losses:
    def __init__(self, doctor: Chart) -> None:
        self.doctor = doctor
        self.dotdata = DotData(doctor)
        self.data_read = self.dotdata.data_read
        self.before_backward = self.dotdata.before_backward
        self.after_backward = self.dotdata.after_backward

    def close(self) -> None:
        self.dotdata.close()

    def loss_input(self, how: str, logits: torch.Tensor) -> None:
        doctor = self.doctor
        if not logits.is_floating_point():
            return
        fn = graphs.grad_fn_name(logits) or ""
        if how == "binary_cross_entropy_with_logits":
            if fn.startswith(_SQUASHED):
                made = "a sigmoid" if fn.startswith("Sigmoid") else "a softmax"
                loss = "binary_cross_entropy_with_logits (nn.BCEWithLogitsLoss)"
                self._name("probabilities_into_logits_loss", loss, logits, fed=made)
            return
        loss = "cross_entropy (nn.CrossEntropyLoss)" if how == "cross_entropy" else how
        if how == "cross_entropy" and logits.dim() >= 2 and logits.shape[1] == 1:
            self._name("single_class_cross_entropy", loss, logits, value=0.0)
            return
        if self._one_value_softmax(loss, logits):
            return
        if fn.startswith("LogSoftmax"):
            softmax = graphs.below(logits.grad_fn, "Softmax")
            if softmax is not None:
                probabilities = getattr(softmax, "_saved_result", None)
                if isinstance(probabilities, torch.Tensor):
                    self._softmaxed(f"log_softmax before {how}", probabilities)
            return
        if how == "cross_entropy" and fn.startswith("Sigmoid"):
            self._name("sigmoid_before_cross_entropy", loss, logits)
            return
        softmaxed = fn.startswith("Softmax")
        if not softmaxed and not (doctor.sampled() and logits.dim() >= 2 and logits.numel()):
            return
        if softmaxed or _probabilities(logits):
            self._softmaxed(loss, logits)

    def _softmaxed(self, loss: str, fed: torch.Tensor) -> None:
        low, high = _range(fed)
        with torch.no_grad():
            x = fed.detach().float()
            row_sum = float(x.sum(dim=1).flatten()[0]) if x.dim() >= 2 else float(x.sum())
        evidence = {"loss": loss, "min": low, "max": high, "row_sum": row_sum, "fed": _TWICE}
        self.doctor.name("softmax_before_loss", self.doctor.place(), evidence)

    def _one_value_softmax(self, loss: str, logits: torch.Tensor) -> bool:
        """The input is (the log of) a softmax over a dimension of size 1: every value 1.0."""
        fn = logits.grad_fn
        softmax = fn if type(fn).__name__.startswith("Softmax") else None
        if softmax is None and type(fn).__name__.startswith("Log"):
            softmax = graphs.below(fn, "Softmax")
        result = getattr(softmax, "_saved_result", None)
        dim = getattr(softmax, "_saved_dim", None)
        if not isinstance(result, torch.Tensor) or not isinstance(dim, int):
            return False
        if result.dim() == 0:
            return False
        dim = (dim - 2**64 if dim >= 2**63 else dim) % result.dim()  # saved unsigned: -1 is 2**64-1
        if result.shape[dim] != 1:
            return False
        log = "the log of " if softmax is not fn else ""
        fed = (
            f"{log}a softmax over dim {dim} of its {result.dim()}-D input, a dimension "
            f"of size 1, so every value is 1.0: the loss is constant and no gradient flows "
            f"(F.softmax without dim takes dim 0 of a 3-D tensor)"
        )
        evidence = {"loss": loss, "dim": dim, "shape": list(result.shape), "min": 1.0, "max": 1.0}
        self.doctor.name("softmax_before_loss", self.doctor.place(), {**evidence, "fed": fed})
        return True

    def _name(self, bug: str, loss: str, tensor: torch.Tensor, **more: object) -> None:
        low, high = _range(tensor)
        evidence = {"loss": loss, "shape": list(tensor.shape), "min": low, "max": high, **more}
        self.doctor.name(bug, self.doctor.place(), evidence)


def _range(x: torch.Tensor) -> tuple[float, float]:
    with torch.no_grad():
        t = x.detach().float()
        return (float(t.min()), float(t.max())) if t.numel() else (0.0, 0.0)


def _probabilities(x: torch.Tensor) -> bool:
    """Numbers in [0, 1] whose rows sum to 1."""
    with torch.no_grad():
        x = x.detach().float()
        if float(x.min()) < 0 or float(x.max()) > 1:
            return False
        rows = x.sum(dim=1)
        return bool(torch.allclose(rows, torch.ones_like(rows), atol=1e-3))
