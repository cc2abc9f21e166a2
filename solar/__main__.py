"""``python -m solar`` runs the CLI."""

from __future__ import annotations

from solar.cli import main

main()
