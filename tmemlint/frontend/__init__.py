"""Frontends: PTX text → typed IR (``tmemlint.ir``)."""

from tmemlint.frontend.parser import PTXSyntaxError, parse_file, parse_text

__all__ = ["PTXSyntaxError", "parse_file", "parse_text"]
