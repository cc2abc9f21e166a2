"""Shared pytest configuration: golden files, hypothesis profiles, sample discovery."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
GOLDEN = Path(__file__).resolve().parent / "golden"

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", deadline=None, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# No test may depend on the environment it inherits (issue 30 item 7): the variables SOLAR
# reads are cleared for the whole session, in this process and the ones it starts; a test
# that needs one sets it itself (monkeypatch.setenv, or the env of its subprocess).
_SOLAR_READS = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GITHUB_STEP_SUMMARY")
for _name in [n for n in os.environ if n.startswith("SOLAR_") or n in _SOLAR_READS]:
    del os.environ[_name]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden", action="store_true", help="rewrite golden files instead of comparing"
    )


class Golden:
    """Compare text with a golden file under tests/golden, or rewrite it."""

    def __init__(self, update: bool) -> None:
        self.update = update

    def check(self, relpath: str, text: str) -> None:
        path = GOLDEN / relpath
        if self.update or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            if not self.update:
                pytest.fail(f"golden file {relpath} did not exist; created it")
            return
        expected = path.read_text(encoding="utf-8")
        assert text == expected, f"output differs from golden {relpath} (--update-golden)"


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Golden:
    return Golden(bool(request.config.getoption("--update-golden")))


def ir_samples() -> list[Path]:
    """Every hand-written IR sample (samples/ir/*.alir)."""
    return sorted((SAMPLES / "ir").glob("*.alir"))
