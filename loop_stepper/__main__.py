"""``python -m loop_stepper doctor train.py``: the ``loop-stepper`` command (``cli.py``)."""

from loop_stepper.cli import main

main()
