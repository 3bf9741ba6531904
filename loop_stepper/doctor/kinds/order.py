"""The order of the loop's calls, read from each ``.grad`` buffer (``doctor/order.py``): a
backward onto a used gradient, a step before any backward, a clear between backward and step,
clipping or the scheduler at the wrong moment, a backward PyTorch refuses, a parameter the loss
does not reach."""

from __future__ import annotations

from loop_stepper.doctor.kinds.kind import Kind

FAMILY = "order"

SKIP_ZERO_GRAD = Kind(
    "skip_zero_grad",
    FAMILY,
    "a `backward()` added into a `.grad` an earlier step had used, and a step read the sum; a "
    "step is an optimizer's `step()` or a step by hand (`p -= lr * p.grad`, `p.data.add_`)",
    """
    for x, y in batches:
        loss = F.mse_loss(model(x), y)
        loss.backward()          # adds onto the last iteration's .grad
        optimizer.step()
    """,
    "call optimizer.zero_grad() once per iteration, before backward()",
    "this backward() added into .grad that still held the gradient an earlier step() had "
    "already used, and the next step() read the sum",
)
STEP_FIRST = Kind(
    "step_first",
    FAMILY,
    "`step()` read None (no backward yet) or the gradient an earlier step had used",
    """
    for x, y in batches:
        optimizer.zero_grad()
        optimizer.step()         # reads the gradient of no backward yet
        loss = F.mse_loss(model(x), y)
        loss.backward()
    """,
    "call optimizer.step() after loss.backward()",
    "step() ran before this iteration's backward(): it read {read} and {moved}",
)
ZERO_GRAD_BEFORE_STEP = Kind(
    "zero_grad_before_step",
    FAMILY,
    "`zero_grad()` emptied the buffers to None between `backward()` and `step()`, so the step "
    "found no gradient",
    """
    loss.backward()
    optimizer.zero_grad()        # empties what backward() just wrote
    optimizer.step()
    """,
    "call optimizer.zero_grad() before backward(), not between backward() and step()",
    "zero_grad() emptied the buffers backward() had just filled, so step() found .grad None "
    "and moved nothing",
)
ZEROS = Kind(
    "zeros",
    FAMILY,
    "a clear to zeros (`zero_grad(set_to_none=False)`, `fill_(0)`, `zero_()`) between "
    "`backward()` and `step()`, where momentum or weight decay still move the weights; a "
    "gradient really zero (a zero-initialised layer, LoRA's `B = 0`) then clipped is no clear",
    """
    loss.backward()
    optimizer.zero_grad(set_to_none=False)
    optimizer.step()             # momentum moves the weights by no gradient
    """,
    "call optimizer.zero_grad() before backward()",
    "zero_grad(set_to_none=False) filled .grad with zeros between backward() and step(), so "
    "step() read no gradient{moved}",
)
BACKWARD_TWICE = Kind(
    "backward_twice",
    FAMILY,
    "`backward()` ran again through a graph the first `backward()` freed: PyTorch's error, in "
    "its own words",
    """
    loss = F.mse_loss(model(x), y)
    loss.backward()
    loss.backward()              # the graph is freed
    """,
    "call backward() once per loss",
    "backward() ran again through a graph the first backward() had freed (PyTorch: {error})",
)
CLIP_BEFORE_BACKWARD = Kind(
    "clip_before_backward",
    FAMILY,
    "clipping read empty buffers (None: no backward yet) or stale ones (a gradient a step had "
    "used) before this iteration's `backward()`",
    """
    optimizer.zero_grad()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)   # clips nothing yet
    loss.backward()
    optimizer.step()
    """,
    "clip between backward() and step()",
    "clip_grad_norm_/clip_grad_value_ read .grad before this iteration's backward(): {read}, so "
    "nothing that step() used was clipped",
)
CLIP_AFTER_STEP = Kind(
    "clip_after_step",
    FAMILY,
    "clipping read a gradient a step had already used",
    """
    loss.backward()
    optimizer.step()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)   # after the step used it
    """,
    "clip between backward() and step()",
    "clipping ran after step() had already used the gradient, so the step was never clipped "
    "(max_norm does nothing)",
)
SCHEDULER_BEFORE_STEP = Kind(
    "scheduler_before_step",
    FAMILY,
    "`lr_scheduler.step()` before the optimizer's first step of the schedule's period",
    """
    for epoch in range(epochs):
        scheduler.step()         # before any optimizer.step() of the epoch
        train_one_epoch(model, optimizer)
    """,
    "call scheduler.step() after optimizer.step()",
    "lr_scheduler.step() ran before any optimizer.step() of {optimizer}, so the schedule's "
    "first value (lr {lr}) was never used",
)
SCHEDULER_OTHER_OPTIMIZER = Kind(
    "scheduler_other_optimizer",
    FAMILY,
    "`lr_scheduler.step()` changes the lr of an optimizer that never steps while another one "
    "does the training (the scheduler built on an optimizer since replaced): the lr that "
    "steps never changes",
    """
    scheduler = StepLR(optimizer, step_size=1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)   # a new one: not scheduled
    ...
    optimizer.step()
    scheduler.step()             # schedules the old optimizer
    """,
    "build the scheduler on the optimizer that steps (after the last time it is made)",
    "lr_scheduler.step() scheduled {scheduled}, which never stepped, while {stepping} did the "
    "training with its lr {lr} unchanged",
)
ACCUMULATION_UNSCALED = Kind(
    "accumulation_unscaled",
    FAMILY,
    "k ≥ 2 backwards of a mean loss (reduction `mean`, not divided) at one statement before a "
    "step: the accumulated gradient is k times the mean's, the effective lr k times too large",
    """
    for i, (x, y) in enumerate(batches):
        loss = F.cross_entropy(model(x), y)
        loss.backward()          # four means added, none divided by 4
        if i % 4 == 3:
            optimizer.step()
            optimizer.zero_grad()
    """,
    "divide each micro-batch's loss by the number of micro-batches ((loss / k).backward())",
    "{backwards} backwards of a mean loss ({loss}) added into .grad before one step, none "
    "divided by {backwards}: the step is {backwards} times the mean gradient",
)
ACCUMULATION_RESET = Kind(
    "accumulation_reset",
    FAMILY,
    "`zero_grad()` cleared gradients no `step()` had used, and a `backward()` then wrote afresh",
    """
    for i, (x, y) in enumerate(batches):
        optimizer.zero_grad()    # clears the micro-batches not yet stepped
        F.mse_loss(model(x), y).backward()
        if i % 4 == 3:
            optimizer.step()
    """,
    "in gradient accumulation call zero_grad() only after the step",
    "zero_grad() cleared gradients that a backward() had written and no step() had used ({params})",
)
NO_GRADIENT = Kind(
    "no_gradient",
    FAMILY,
    "the loss does not reach parameters the optimizer holds that the forward used (their "
    "module's output reaches them), or reaches nothing the optimizer holds (PyTorch's error); "
    "named after one step where it reached none of them, at the statement that cut the graph "
    "when the user's names show it (a tensor made anew with `requires_grad=True` whose own "
    "`.grad` got the gradient, a copy of the model whose parameters did); a sub-module this "
    "configuration's forward does not use is not named",
    """
    features = backbone(x).detach()      # cuts the graph
    loss = F.cross_entropy(head(features), y)
    loss.backward()                      # backbone's .grad stays None
    optimizer.step()
    """,
    "let the loss reach every parameter the optimizer holds (no .detach(), .numpy(), argmax, "
    "re-wrapped tensor or copy of the model on the way), or give the optimizer only those it "
    "trains",
    "the loss does not reach {params} that the optimizer holds{went}: their .grad stays None "
    "and step() moves nothing{error}",
)
OPTIMIZER_WRONG_MODEL = Kind(
    "optimizer_wrong_model",
    FAMILY,
    "an optimizer steps and the backward reached none of its parameters, while the loss "
    "reaches another model's parameters (other numbers: not a copy of its own) that no "
    "optimizer holds",
    """
    teacher.eval()
    optimizer = torch.optim.SGD(teacher.parameters(), lr=0.1)   # the wrong model
    loss = F.cross_entropy(student(x), y)
    loss.backward()              # student gets the gradient, nothing steps it
    optimizer.step()
    """,
    "give the optimizer the parameters of the model the loss is computed from",
    "the {optimizer} steps {trains}, which the loss never reaches, while {reached} gets the "
    "gradients and no optimizer holds it, so it never trains",
)
