"""The zoo's JAX programs are model files for `solar analyze`, not test modules."""
from __future__ import annotations

collect_ignore = ["jax_programs", "jax_user_programs"]
