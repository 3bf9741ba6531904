"""The silent bugs the doctor names: each id (the stepper's preset name where there is one), what
the numbers showed, and the fix in one sentence.

A diagnosis is ``{"bug", "file", "line", "iteration", "message", "evidence"}``: ``line`` is
the statement where the numbers show it, ``evidence`` the numbers themselves.
"""

from __future__ import annotations

from typing import Any, TypedDict


class Diagnosis(TypedDict):
    bug: str
    file: str | None
    line: int | None
    iteration: int
    message: str
    evidence: dict[str, Any]


# id -> what happened and the fix; ``{...}`` fields are filled from the evidence
MESSAGES: dict[str, str] = {
    "skip_zero_grad": (
        "this backward() added into .grad that still held the gradient an earlier step() had "
        "already used, and the next step() read the sum; call optimizer.zero_grad() once per "
        "iteration, before backward()"
    ),
    "step_first": (
        "step() ran before this iteration's backward(): it read {read} and {moved}; call "
        "optimizer.step() after loss.backward()"
    ),
    "zero_grad_before_step": (
        "zero_grad() emptied the buffers backward() had just filled, so step() found .grad "
        "None and moved nothing; call optimizer.zero_grad() before backward(), not between "
        "backward() and step()"
    ),
    "zeros": (
        "zero_grad(set_to_none=False) filled .grad with zeros between backward() and step(), "
        "so step() read no gradient{moved}; call optimizer.zero_grad() before backward()"
    ),
    "backward_twice": (
        "backward() ran again through a graph the first backward() had freed (PyTorch: "
        "{error}); call backward() once per loss"
    ),
    "backward_twice_retain": (
        "the same loss was backpropagated twice (retain_graph=True kept its graph), so its "
        "gradient was added into .grad twice; call backward() once per loss"
    ),
    "clip_before_backward": (
        "clip_grad_norm_/clip_grad_value_ read .grad before this iteration's backward(): "
        "{read}, so nothing that step() used was clipped; clip between backward() and step()"
    ),
    "clip_after_step": (
        "clipping ran after step() had already used the gradient, so the step was never "
        "clipped (max_norm does nothing); clip between backward() and step()"
    ),
    "scheduler_before_step": (
        "lr_scheduler.step() ran before the first optimizer.step() of its period, so the "
        "schedule's first value was skipped (lr {lr} became {next_lr}); call scheduler.step() "
        "after optimizer.step()"
    ),
    "eval_while_training": (
        "a training backward() ran through {modules} in eval mode, where the mode changes the "
        "numbers (dropout off, BatchNorm's running statistics used and never updated); call "
        "model.train() before the training forward"
    ),
    "validation_with_grad": (
        "a forward pass in eval mode built an autograd graph that no backward() used "
        "({nodes} nodes kept alive while it is held); run validation under torch.no_grad() or "
        "torch.inference_mode()"
    ),
    "log_tensor": (
        "{name} keeps the loss tensor and its autograd graph across iterations ({graphs} graphs, "
        "{nodes} nodes so far, growing every iteration); add loss.item(), a Python float"
    ),
    "softmax_before_loss": (
        "{loss} was fed probabilities (every row sums to 1, values in [0, 1]), a softmax's "
        "output, and takes their log_softmax, so the softmax is applied twice and training "
        "crawls; pass the raw logits (with nll_loss, log_softmax of the logits)"
    ),
    "resume_without_optimizer": (
        "the model's weights were restored here but the stateful optimizer started again with "
        "no state ({optimizer}: its step count and moments restarted), so the first steps "
        "jump; save optimizer.state_dict() in the checkpoint and load it on resume"
    ),
    "optimizer_recreated": (
        "a new {optimizer} was made over parameters an earlier one was training, dropping its "
        "state ({lost}) each time; make the optimizer once, before the loop"
    ),
    "float16_without_scaler": (
        "backward() ran through a float16 autocast graph without a GradScaler, so small "
        "gradients underflow to 0 silently; use torch.amp.GradScaler (scaler.scale(loss)"
        ".backward(), scaler.step(optimizer), scaler.update()) or bfloat16"
    ),
    "accumulation_reset": (
        "zero_grad() cleared gradients that a backward() had written and no step() had used "
        "({params}); in gradient accumulation call zero_grad() only after the step"
    ),
    "not_in_optimizer": (
        "{params} received a gradient at every iteration but no optimizer holds it, so it never "
        "moves; give the optimizer every parameter (nn.ModuleList, not a plain list; every "
        "parameter group)"
    ),
    "no_gradient": (
        "the loss does not reach {params} that the optimizer holds: their .grad stays None and "
        "step() moves nothing (a .detach(), .numpy(), argmax or frozen layer on the way)"
        "{error}"
    ),
    "nonfinite": (
        "the {store} stopped being finite here ({value}{where}); lower the lr, clip the "
        "gradient or check the data and the loss for log(0) or division by zero"
    ),
}

BUGS = tuple(MESSAGES)


def message(bug: str, evidence: dict[str, Any]) -> str:
    """The bug's sentence with its numbers; a field the evidence lacks is left out."""
    fields = _Fields({k: _said(v) for k, v in evidence.items()})
    return MESSAGES[bug].format_map(fields)


class _Fields(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return ""


def _said(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list | tuple):
        return ", ".join(_said(v) for v in value)
    return str(value)
