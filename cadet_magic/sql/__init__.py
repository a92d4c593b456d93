"""Portable SQL helpers: the safety check, the row limit and normalization."""
