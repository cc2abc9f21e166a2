"""Per-op LLM fallback in `solar analyze --frontend auto`, over real HTTP to a scripted server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import ScriptedServer, chat_reply

from solar.frontends.llm import LLMConfig
from solar.pipeline import AnalyzeOptions, analyze

pytestmark = pytest.mark.torch

MODEL = '''
import torch
import torch.nn as nn

# A custom op the tracer has no lowering for.
@torch.library.custom_op("solartest::shifted_square", mutates_args=())
def shifted_square(x: torch.Tensor) -> torch.Tensor:
    return (x + 1.0) * (x + 1.0)

@shifted_square.register_fake
def _(x):
    return torch.empty_like(x)

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(shifted_square(x)) * 2.0

def get_inputs():
    return [torch.randn(4, 6)]

def get_init_inputs():
    return []
'''

KERNEL_WRONG = """```alir
solar-ir 1
program shifted_square

input a0 : f32[4, 6]
output out0 : f32[4, 6]

kernel shifted_square {
  for i in 0 .. 4 {
    for j in 0 .. 6 {
      out0[i, j] = a0[i, j] * a0[i, j]
    }
  }
}
```"""

KERNEL_RIGHT = KERNEL_WRONG.replace("a0[i, j] * a0[i, j]", "(a0[i, j] + 1.0) * (a0[i, j] + 1.0)")


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv


def test_uncovered_op_is_filled_by_the_llm_after_validation(
    tmp_path: Path, server: ScriptedServer
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("openai")
    src = tmp_path / "custom_op_model.py"
    src.write_text(MODEL)
    server.push(chat_reply(KERNEL_WRONG), chat_reply(KERNEL_RIGHT))
    config = LLMConfig(base_url=server.base_url, api_key="", model="test-model",
                       cache_dir=tmp_path / "cache", timeout_s=10.0)
    report = analyze(src, AnalyzeOptions(llm=config))
    assert report.coverage.complete, report.coverage
    assert report.validation.status == "passed"
    assert len(server.requests) == 2
    # the op's real outputs disagreed with the first kernel; the mismatch went back
    second = server.requests[1]["messages"][-1]["content"]
    assert "out0" in second
    # without an LLM, the same op is reported uncovered with its share, never dropped
    plain = analyze(src, AnalyzeOptions())
    assert not plain.coverage.complete
    (row,) = plain.coverage.uncovered
    assert row.op.startswith("solartest.shifted_square")
    assert 0.0 < row.bytes_share < 1.0
