"""predict."""
