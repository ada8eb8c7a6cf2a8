"""Analyses over the typed IR: control flow, values, TMEM facts, path-sensitive allocation state."""
