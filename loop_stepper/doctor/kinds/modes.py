"""The train/eval mode (``doctor/modes.py``): a forward whose numbers do not follow its
module's mode."""

from __future__ import annotations

from loop_stepper.doctor.kinds.kind import Kind

FAMILY = "modes"

DROPOUT_IN_EVAL = Kind(
    "dropout_in_eval",
    FAMILY,
    "`F.dropout(x, p)` with `p > 0` called in the forward of a module in eval mode without "
    "`training=self.training`: its default `training=True` keeps dropping after `model.eval()`",
    """
    def forward(self, x):
        x = F.dropout(F.relu(self.fc1(x)), 0.5)    # training=True, whatever the mode
        return self.fc2(x)
    """,
    "pass training=self.training to F.dropout (or use an nn.Dropout module)",
    "F.dropout(p={p}) ran in the forward of {module}, which is in eval mode, with training=True: "
    "the evaluation is still random",
)
VALIDATION_IN_TRAIN_MODE = Kind(
    "validation_in_train_mode",
    FAMILY,
    "a forward under `torch.no_grad()` / `inference_mode()` (an evaluation) through a model in "
    "train mode holding BatchNorm that tracks running statistics or dropout with p > 0: the "
    "statistics move with the validation batches and dropout masks are drawn",
    """
    with torch.no_grad():
        val_loss = F.cross_entropy(model(x_val), y_val)   # model.eval() forgotten
    """,
    "call model.eval() before the evaluation (and model.train() after it)",
    "an evaluation under {grad} ran {model} in train mode ({modules}): {effect}",
)
