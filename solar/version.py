"""SOLAR's version, spelled once (a leaf: the pipeline, the CLI and the batch journal
read it without importing the `solar` package's own API)."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
