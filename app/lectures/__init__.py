"""lectures."""
