"""tmemlint: a static checker for NVIDIA Blackwell Tensor Memory (TMEM) use in PTX and CUDA sources."""

__version__ = "0.3.0"
