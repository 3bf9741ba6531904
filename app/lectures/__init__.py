"""Lectures: a session followed live by a class under a join code. The record and its codes
(``lecture.py``), the hub (``hub.py``), events on the wire (``fanout.py``), the "which bug" quiz
(``quizzes.py``), the class's polls (``poll.py``, ``polls.py``), and their delivery on this process
or across processes (``broadcast.py``, ``relay.py``)."""
