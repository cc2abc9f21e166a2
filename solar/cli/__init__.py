"""The ``solar`` command line: thin wrappers over the library.

Contract: each command parses its arguments, calls one library function and
renders the result. Data goes to stdout, diagnostics to stderr. Exit codes:
0 = done (and validation, if any, passed); 1 = the input is at fault (IR syntax or
verify errors, validation mismatch or error, a rejected report, a failed gate); 2 =
usage, configuration or internal error (docs/reliability.md). Option values are
checked by typer against `solar.options` before any work; a bad one is a usage
diagnostic (E0904). Every help page ends with examples and the exit codes
(`solar.cli.app.examples`).

`app.py` holds the application and `main`; each other module registers one family
of commands on it when imported.
"""

from __future__ import annotations

from solar.cli import analysis, batch, hardware, ir, reports, sweep  # noqa: F401  (they register commands)
from solar.cli.app import app, main, use_solar_commands

use_solar_commands(app)

__all__ = ["app", "main"]
