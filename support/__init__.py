"""What tests and benchmarks share: the server in a thread or a process, PostgreSQL,
app processes behind nginx, and the oracle (plain PyTorch)."""
