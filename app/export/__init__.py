"""A session's log as a standalone plain-PyTorch script, or the same as a Jupyter notebook.

The log (setup + events, see the timeline) says what ran; the export writes the Python that
runs it again outside the app: the lesson's own lines, the lr changes where they happened,
failures where they happened, repeated iterations folded into ``for`` loops. Run, it ends by
printing one line of JSON with the exact numbers the Lab holds (parameters, ``.grad``, loss).

Nothing here imports the web layer, and the engine does not import this module.
"""

from __future__ import annotations

from app.export.formats import notebook, script
from app.export.setup import Unsupported
from app.export.units import EXPORTABLE

__all__ = ["EXPORTABLE", "Unsupported", "notebook", "script"]
