"""SOLAR: speed-of-light analysis for PyTorch and JAX programs."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
