"""The stores as the page draws them: one function, ``view``, for a Lab and a recorded moment
alike (``draw.py``); the tensors' summaries (``tensors.py``), the autograd graph's nodes
(``graph.py``) and the shapes they all take (``views.py``)."""

from loop_stepper.stores.draw import Stores, StoresView, held, page, params, state_of, view

__all__ = ["Stores", "StoresView", "held", "page", "params", "state_of", "view"]
