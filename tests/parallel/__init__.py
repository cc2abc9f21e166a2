"""Tests of solar.distributed."""
