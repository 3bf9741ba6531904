"""Test support that is only ever a test's: the fake LMS (``fake_lms.py``)."""
