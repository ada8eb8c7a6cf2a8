"""The version of tmemlint (PEP 440), in the base layer so that every layer can name it; ``tmemlint.__version__``
re-exports it and the build reads it from here (``[tool.hatch.version]``)."""

__version__ = "0.3.0"
