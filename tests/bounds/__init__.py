"""Tests of solar.bounds."""
