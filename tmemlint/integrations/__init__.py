"""Integrations with compilers that emit sm_100a / sm_103a PTX in a Python process (``triton``, ``cute``: the CuTe
DSL of ``nvidia-cutlass-dsl``); ``common`` holds what their hooks share, ``autoload`` the environment switches."""
