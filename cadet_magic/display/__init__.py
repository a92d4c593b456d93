"""Displays: static text/HTML bundles (stdlib) and the live ipywidgets panel (edge)."""
