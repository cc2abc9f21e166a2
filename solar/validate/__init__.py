"""Validation: execute IR on numpy arrays and compare with reference outputs."""

from __future__ import annotations

from solar.validate.executor import execute_program
from solar.validate.memory import estimate_memory_bytes

__all__ = ["estimate_memory_bytes", "execute_program"]
