"""Deterministic generators of realistic logs (being written)."""
