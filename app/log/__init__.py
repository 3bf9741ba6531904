"""A session as its log: the records (setup, events, changes), the timeline that drives a Lab and
writes each action down, keyframes as bytes, and where a replay starts.

Below the database: the db stores these records, and the timeline reads older keyframes only
through the narrow ``KeyframeSource`` protocol, so nothing here imports ``app.db``."""
