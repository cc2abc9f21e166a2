"""Tests of solar.einsum."""
