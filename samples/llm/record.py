"""Regenerate the recorded LLM translations of samples/llm (offline, deterministic).

Each sample ``samples/llm/<name>.py`` has scripted model replies in
``samples/llm/replies/<name>/<n>.md`` (attempt 1 is wrong in a realistic way,
the last one is right). This script replays them through the real repair loop
(`record_cache_entry`) and writes the cache entries to ``samples/llm/cache/``
under the model name ``recorded``, so that

    solar analyze samples/llm/<name>.py --frontend llm \
        --model recorded --cache-dir samples/llm/cache

runs offline from the cache. Rerun it after bumping PROMPT_VERSION or editing a
sample or its task (tests/frontends/test_llm_samples.py fails until you do):

    .venv/bin/python samples/llm/record.py
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from solar.frontends.llm import (
    TranslationResult,
    TranslationTask,
    clear_cache,
    program_task_from_torch,
    record_cache_entry,
)

HERE = Path(__file__).resolve().parent
CACHE_DIR = HERE / "cache"
REPLIES_DIR = HERE / "replies"
RECORDED_MODEL = "recorded"


def sample_paths() -> list[Path]:
    """Every sample that has recorded replies."""
    return sorted(p for p in HERE.glob("*.py") if (REPLIES_DIR / p.stem).is_dir())


def load_sample(path: Path) -> ModuleType:
    """Import a sample file by path (the KernelBench convention)."""
    spec = importlib.util.spec_from_file_location(f"solar_llm_sample_{path.stem}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sample_task(path: Path) -> tuple[str, TranslationTask]:
    """The source text and whole-program task of a sample, as `solar analyze` builds them."""
    import torch

    module = load_sample(path)
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs())
    inputs = list(module.get_inputs())
    return path.read_text(encoding="utf-8"), program_task_from_torch(model, inputs)


def sample_replies(path: Path) -> list[str]:
    """The scripted replies of a sample, in attempt order."""
    files = sorted((REPLIES_DIR / path.stem).glob("*.md"), key=lambda p: int(p.stem))
    return [f.read_text(encoding="utf-8") for f in files]


def record_sample(path: Path, cache_dir: Path) -> TranslationResult:
    """Record one sample's cache entry into ``cache_dir``."""
    source, task = sample_task(path)
    return record_cache_entry(
        source,
        task=task,
        model=RECORDED_MODEL,
        replies=sample_replies(path),
        cache_dir=cache_dir,
    )


def record_all(cache_dir: Path = CACHE_DIR) -> list[TranslationResult]:
    """Clear ``cache_dir`` and record every sample into it."""
    clear_cache(cache_dir)
    return [record_sample(path, cache_dir) for path in sample_paths()]


def main() -> int:
    for path, result in zip(sample_paths(), record_all(), strict=True):
        outcomes = " -> ".join(a.outcome for a in result.attempts)
        assert result.cache_path is not None
        rel = result.cache_path.relative_to(HERE.parents[1])
        sys.stdout.write(f"{path.name:24} {outcomes:32} {rel}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
