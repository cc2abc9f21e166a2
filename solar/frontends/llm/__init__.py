"""LLM frontend: any source program (or one operator) to Affine Loop IR via an
OpenAI-compatible chat-completions endpoint, with a repair loop and a cache.

Contract: ``translate_program(source, config=, task=, check=) -> TranslationResult``.
The reply is only ever parsed as IR text; a rejected reply's diagnostic goes back
to the model until ``config.max_attempts`` is spent. Failures are `LLMError`
subclasses with codes E0601-E0611 (see `solar.frontends.llm.errors`).
`LLMFrontend` is the whole-program frontend behind the `Frontend` protocol;
`make_op_fallback` (op_fallback.py) serves the PyTorch tracer one op at a time.
docs/llm.md is the user guide.
"""

from __future__ import annotations

from solar.frontends.llm.cache import (
    CACHE_FORMAT,
    CacheEntry,
    cache_key,
    clear_cache,
    key_material,
    load_entry,
    source_sha256,
)
from solar.frontends.llm.config import LLMConfig, default_cache_dir
from solar.frontends.llm.errors import (
    LLMConfigError,
    LLMEndpointError,
    LLMReplyError,
    LLMTranslationError,
)
from solar.frontends.llm.extract import extract_ir
from solar.frontends.llm.frontend import LLMFrontend
from solar.frontends.llm.prompt import PROMPT_VERSION, build_messages
from solar.frontends.llm.result import OUTCOMES, Attempt, Outcome, TranslationResult
from solar.frontends.llm.task import (
    ProgramIONames,
    TensorSpec,
    TranslationTask,
    check_interface,
    program_io_names,
)
from solar.frontends.llm.torch_task import program_task_from_torch
from solar.frontends.llm.translate import (
    Check,
    accept_ir,
    record_cache_entry,
    translate_program,
)

__all__ = [
    "CACHE_FORMAT",
    "OUTCOMES",
    "PROMPT_VERSION",
    "Attempt",
    "CacheEntry",
    "Check",
    "LLMConfig",
    "LLMConfigError",
    "LLMEndpointError",
    "LLMFrontend",
    "LLMReplyError",
    "LLMTranslationError",
    "Outcome",
    "ProgramIONames",
    "TensorSpec",
    "TranslationResult",
    "TranslationTask",
    "accept_ir",
    "build_messages",
    "cache_key",
    "check_interface",
    "clear_cache",
    "default_cache_dir",
    "extract_ir",
    "key_material",
    "load_entry",
    "program_io_names",
    "program_task_from_torch",
    "record_cache_entry",
    "source_sha256",
    "translate_program",
]
