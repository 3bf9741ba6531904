"""What goes into the loss, read from the tensor fed to it as the probe hands it over
(``cross_entropy``, ``nll_loss``, ``binary_cross_entropy_with_logits``, also through their
``nn`` modules): probabilities where the loss takes logits — a softmax's output or rows in
[0, 1] summing to 1 into ``cross_entropy`` (``softmax_before_loss``), a sigmoid's output into
``cross_entropy`` (``sigmoid_before_cross_entropy``) or into a loss with logits
(``probabilities_into_logits_loss``) — and a class dimension of one
(``single_class_cross_entropy``). Which function made the input is its graph's last node, a
fact of the run, never the source's text; a cheap look at every call, the rows' sums in the
sampled iterations."""

from __future__ import annotations

import torch

from loop_stepper.doctor import graphs
from loop_stepper.doctor.chart import Chart

_SQUASHED = ("Sigmoid", "Softmax")  # the graph's last node of a probability


class Losses:
    def __init__(self, doctor: Chart) -> None:
        self.doctor = doctor

    def close(self) -> None: ...

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
        evidence = {"loss": loss, "min": low, "max": high, "row_sum": row_sum}
        self.doctor.name("softmax_before_loss", self.doctor.place(), evidence)

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
