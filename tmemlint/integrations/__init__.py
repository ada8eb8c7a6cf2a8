"""Integrations with compilers that emit sm_100a / sm_103a PTX in a Python process (``triton``)."""
