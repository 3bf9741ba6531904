"""What a training loop does to PyTorch, heard as it happens: every backward, optimizer step,
zero_grad, clip, scheduler step, cross-entropy's input, optimizer made, state saved and
loaded, ``torch.load`` and ``torch.save``, ``train()``/``eval()``, autocast entered, a
GradScaler's scale and step;
what the loop reads (``reads.py``): a parameter's ``.data``, a DataLoader's batches, a
DistributedSampler's order, a DistributedDataParallel forward and whether it syncs.

``Probe`` is a context manager: inside it, this thread's ``Observer`` is told of each such call
before (and for some, after) it runs, in the caller's own stack, so it may read the frames and
the tensors. The hooks are PyTorch's own where it has them (the optimizers' global step hooks)
and thin wrappers of the functions elsewhere; they are installed while any probe is open and
removed when the last one closes, also on an exception. A wrapper calls the original with the
same arguments and returns its result: nothing it hears changes a number.

**Fail-open.** A hook that raises is a bug of this package, never the user's: the observer whose
method raised is told ``failed`` and hears nothing more, and the call it was hooked into runs on
as it would without it. Only ``BaseException``s that are not ``Exception``s pass through (the
recorder's and the doctor's own stops, ``KeyboardInterrupt``). A process forked while a probe is
open (a DataLoader's worker) tells its observers nothing (``os.register_at_fork``).

Only calls made through the module attributes are heard (``loss.backward()``,
``torch.nn.utils.clip_grad_norm_``, ``F.cross_entropy`` and ``nn.CrossEntropyLoss``): a name
imported with ``from torch.nn.utils import clip_grad_norm_`` before the probe opened is the
original function (under ``loop-stepper doctor`` the probe opens before the script's imports).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
import torch.nn.utils
import torch.nn.utils.clip_grad
from torch import nn
from torch.optim import lr_scheduler
from torch.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

from loop_stepper.recorder import reads
from loop_stepper.recorder.observer import Observer

_here = threading.local()  # this thread's observers, innermost last
_lock = threading.Lock()
_open = 0  # probes open in the process; the hooks are in while it is above 0
_undo: list[Callable[[], None]] = []


def observers() -> list[Observer]:
    found: list[Observer] | None = getattr(_here, "observers", None)
    return found if found is not None else []


def _tell(name: str, *args: Any) -> None:
    for observer in observers():
        if observer.off:
            continue
        try:
            getattr(observer, name)(*args)
        except Exception as error:  # the observer's own bug: it stops, the user's code runs on
            fail(observer, name, error)


def fail(observer: Observer, hook: str, error: Exception) -> None:
    """``observer``'s ``hook`` raised ``error``: it is told so and turned off."""
    with contextlib.suppress(Exception):  # its report of the failure failed: off all the same
        observer.failed(hook, error)
    observer.off = True


def guarded(observer: Observer, hook: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as a hook of ``observer``'s that PyTorch or the interpreter calls (a global forward
    hook, a trace function): it does nothing once the observer is off, and an error of its own
    turns the observer off (``fail``) instead of reaching the user's code."""

    @functools.wraps(fn)
    def hook_(*args: Any) -> Any:
        if observer.off:
            return None
        try:
            return fn(*args)
        except Exception as error:
            fail(observer, hook, error)
            return None

    return hook_


def _forked() -> None:
    """In a child process forked from a traced one (a DataLoader worker, a multiprocessing
    child): nothing is traced or heard there, the parent's recording is the parent's."""
    sys.settrace(None)
    _here.observers = []


os.register_at_fork(after_in_child=_forked)


@contextmanager
def Probe(observer: Observer) -> Iterator[Observer]:
    """Tell ``observer`` what this thread's loop does while the block runs."""
    global _open
    with _lock:
        if _open == 0:
            _install()
        _open += 1
    stack = observers()
    _here.observers = [*stack, observer]
    try:
        yield observer
    finally:
        _here.observers = stack
        with _lock:
            _open -= 1
            if _open == 0:
                _uninstall()


def _patch(owner: Any, name: str, make: Callable[[Any], Any]) -> None:
    if isinstance(owner, type) and name not in owner.__dict__:
        return  # inherited: patched where it is defined
    original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    setattr(owner, name, functools.wraps(original)(make(original)))
    _undo.append(lambda: setattr(owner, name, original))


def _as_list(tensors: Any) -> list[torch.Tensor]:
    if isinstance(tensors, torch.Tensor):
        return [tensors]
    return [t for t in tensors if isinstance(t, torch.Tensor)]


def _install() -> None:
    def backward(original: Any) -> Any:
        def wrapper(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            if not observers():
                return original(tensors, *args, **kwargs)
            roots = _as_list(tensors)
            retain = kwargs.get("retain_graph", args[1] if len(args) > 1 else None)
            create = kwargs.get("create_graph", args[2] if len(args) > 2 else False)
            keep = bool(create if retain is None else retain)
            _tell("before_backward", roots, keep)
            try:
                result = original(tensors, *args, **kwargs)
            except BaseException as error:
                _tell("failed_backward", roots, error)
                raise
            _tell("after_backward", roots, keep)
            return result

        return wrapper

    def zero_grad(original: Any) -> Any:
        def wrapper(self: Any, set_to_none: bool = True) -> Any:
            result = original(self, set_to_none)
            if observers():
                _tell("zero_grad", self, set_to_none)
            return result

        return wrapper

    def clip(how: str) -> Callable[[Any], Any]:
        def make(original: Any) -> Any:
            def wrapper(parameters: Any, *args: Any, **kwargs: Any) -> Any:
                if not observers():
                    return original(parameters, *args, **kwargs)
                parameters = _as_list(parameters)  # a generator is read once: keep it
                _tell("clip", parameters, how)
                result = original(parameters, *args, **kwargs)
                _tell("clipped", parameters, how)
                return result

            return wrapper

        return make

    def scheduler_step(original: Any) -> Any:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            # the scheduler's own first step, inside its __init__, is not the loop's
            if observers() and getattr(self, "_step_count", 1) != 0:
                _tell("scheduler_step", self)
            return original(self, *args, **kwargs)

        return wrapper

    def loss(how: str) -> Callable[[Any], Any]:
        def make(original: Any) -> Any:
            def wrapper(input: Any, *args: Any, **kwargs: Any) -> Any:
                if observers() and isinstance(input, torch.Tensor):
                    _tell("loss_input", how, input)
                return original(input, *args, **kwargs)

            return wrapper

        return make

    def made(original: Any) -> Any:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not observers():
                return original(self, *args, **kwargs)
            # PyTorch's own __init__, untraced: its first call imports torch._dynamo (seconds),
            # which a trace function would hear call by call (three times as long)
            tracer = sys.gettrace()
            sys.settrace(None)
            try:
                result = original(self, *args, **kwargs)
            finally:
                sys.settrace(tracer)
            _tell("optimizer_made", self)
            return result

        return wrapper

    def loaded(original: Any) -> Any:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(self, *args, **kwargs)
            if observers():
                _tell("state_loaded", self)
            return result

        return wrapper

    _patch(torch.autograd, "backward", backward)
    _patch(torch.optim.Optimizer, "zero_grad", zero_grad)
    _patch(nn.Module, "zero_grad", zero_grad)
    for module in (torch.nn.utils, torch.nn.utils.clip_grad):
        _patch(module, "clip_grad_norm_", clip("clip_grad_norm_"))
        _patch(module, "clip_grad_value_", clip("clip_grad_value_"))
    _patch(lr_scheduler.LRScheduler, "step", scheduler_step)
    _patch(lr_scheduler.ReduceLROnPlateau, "step", scheduler_step)
    _patch(F, "cross_entropy", loss("cross_entropy"))
    _patch(F, "nll_loss", loss("nll_loss"))
    _patch(F, "binary_cross_entropy_with_logits", loss("binary_cross_entropy_with_logits"))

    def dropout(original: Any) -> Any:
        def wrapper(input: Any, *args: Any, **kwargs: Any) -> Any:
            if observers():  # F.dropout(input, p=0.5, training=True, inplace=False)
                p = kwargs.get("p", args[0] if args else 0.5)
                training = kwargs.get("training", args[1] if len(args) > 1 else True)
                _tell("dropout", p, bool(training))
            return original(input, *args, **kwargs)

        return wrapper

    _patch(F, "dropout", dropout)

    def entered(original: Any) -> Any:
        def wrapper(self: Any) -> Any:
            result = original(self)
            if observers() and _users_block():
                _tell("grad_mode", torch.is_grad_enabled())
            return result

        return wrapper

    def left(original: Any) -> Any:
        def wrapper(self: Any, *args: Any) -> Any:
            result = original(self, *args)
            if observers() and _users_block():
                _tell("grad_mode", torch.is_grad_enabled())
            return result

        return wrapper

    for mode in (torch.autograd.grad_mode.no_grad, torch.autograd.grad_mode.inference_mode):
        _patch(mode, "__enter__", entered)
        _patch(mode, "__exit__", left)

    def saved(original: Any) -> Any:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            if observers():
                _tell("state_saved", self)
            return original(self, *args, **kwargs)

        return wrapper

    def load(original: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if observers():
                _tell("checkpoint_loaded", result)
            return result

        return wrapper

    def save(original: Any) -> Any:
        def wrapper(obj: Any, *args: Any, **kwargs: Any) -> Any:
            if observers():
                _tell("checkpoint_saved", obj)
            return original(obj, *args, **kwargs)

        return wrapper

    def train(original: Any) -> Any:
        def wrapper(self: Any, mode: bool = True) -> Any:
            result = original(self, mode)
            if observers():
                _tell("mode_set", self, bool(mode))
            return result

        return wrapper

    def autocast(original: Any) -> Any:
        def wrapper(self: Any) -> Any:
            result = original(self)
            if observers():
                _tell("autocast", self.fast_dtype, bool(self._enabled))
            return result

        return wrapper

    def scale(original: Any) -> Any:
        def wrapper(self: Any, outputs: Any) -> Any:
            result = original(self, outputs)
            if observers():
                _tell("scaled", result)
            return result

        return wrapper

    def scaler_step(original: Any) -> Any:
        def wrapper(self: Any, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
            if not observers():
                return original(self, optimizer, *args, **kwargs)
            _tell("scaler_step", optimizer, True)
            try:
                return original(self, optimizer, *args, **kwargs)
            finally:
                _tell("scaler_step", optimizer, False)

        return wrapper

    _patch(torch.optim.Optimizer, "state_dict", saved)
    _patch(torch, "load", load)
    _patch(torch, "save", save)
    _patch(nn.Module, "train", train)
    _patch(torch.amp.autocast_mode.autocast, "__enter__", autocast)
    # torch.amp.GradScaler is torch 2.3's; before it, torch.cuda.amp's class holds the methods
    for scaler in {getattr(torch.amp, "GradScaler", None), torch.cuda.amp.GradScaler} - {None}:
        _patch(scaler, "scale", scale)
        _patch(scaler, "step", scaler_step)
    _patch(torch.optim.Optimizer, "__init__", made)
    _patch(torch.optim.Optimizer, "load_state_dict", loaded)
    _patch(nn.Module, "load_state_dict", loaded)

    def closure(args: Any, kwargs: Any) -> bool:  # args: (optimizer, closure?)
        return (args[1] if len(args) > 1 else kwargs.get("closure")) is not None

    def before(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if closure(args, kwargs):
            _tell("closure_step", optimizer, True)
        _tell("before_step", optimizer)

    def after(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        _tell("after_step", optimizer)
        if closure(args, kwargs):
            _tell("closure_step", optimizer, False)

    hooks = [
        register_optimizer_step_pre_hook(before),
        register_optimizer_step_post_hook(after),
    ]
    _undo.extend(hook.remove for hook in hooks)
    reads.install(_patch, _tell, observers, _undo)


_TORCH = str(Path(torch.__file__).resolve().parent) + os.sep


def _users_block() -> bool:
    """The ``no_grad`` / ``inference_mode`` block entered or left is the user's: a ``with`` in
    their code, or a function of theirs decorated with it; not PyTorch's own (its clipping
    and norms run under ``no_grad`` at every call)."""
    frame = sys._getframe(2)  # whoever called __enter__ / __exit__
    name = frame.f_code.co_filename
    if not name.startswith(_TORCH):
        return True
    decorated = frame.f_locals.get("func") if frame.f_code.co_name == "decorate_context" else None
    code = getattr(decorated, "__code__", None)
    return code is not None and not code.co_filename.startswith(_TORCH)


def _uninstall() -> None:
    while _undo:
        _undo.pop()()
