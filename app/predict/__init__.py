"""Predict first and explain a number: a question about the line at the cursor, answered on a
scratch copy of the timeline (the session itself is never touched), and the parts a ``.grad``
element is made of."""
