"""The stepper in a notebook: ``%%step`` records a cell (``loop_stepper/recorder/``) and shows its
trace in a widget drawn by the page's own views (``widget.js``, bundled by support/bundle.py)."""
