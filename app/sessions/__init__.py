"""Live sessions over the database: the cache of sessions in memory and their turns
(``live.py``), the making of new sessions and copies (``copies.py``), and the journal a timeline
reads keyframes through, with the thread that writes them after the answer (``journal.py``)."""
