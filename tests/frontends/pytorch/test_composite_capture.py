"""Whole-sequence RNN calls are recorded as one call (Note [Composite RNN capture]).

The data-free capture (meta or fake) and the real run must record the same calls with
the same output layouts, the number of calls must not grow with the sequence length,
and an LSTM with projections, which ops_rnn.py cannot lower whole, keeps its per-step
decomposition.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.frontends.pytorch import lower_capture
from solar.frontends.pytorch.capture import capture_program
from solar.frontends.pytorch.loader import source_for_file

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

_MODEL = """
import torch
import torch.nn as nn

SEQ = {seq}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.{cls}(4, 5, 2, batch_first={bf}, bidirectional={bi}{extra})
        self.head = nn.Linear({feat}, 3)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y)


def get_inputs():
    return [torch.randn({shape})]


def get_init_inputs():
    return []
"""


def _model(tmp_path: Path, cls: str, *, bf: bool, bi: bool, seq: int = 6, extra: str = "") -> Path:
    shape = f"3, {seq}, 4" if bf else f"{seq}, 3, 4"
    feat = (2 if bi else 1) * (3 if "proj_size" in extra else 5)
    path = tmp_path / f"{cls.lower()}_{int(bf)}{int(bi)}_{seq}.py"
    path.write_text(
        _MODEL.format(cls=cls, bf=bf, bi=bi, seq=seq, shape=shape, feat=feat, extra=extra)
    )
    return path


@pytest.mark.parametrize(("cls", "op"), [("LSTM", "lstm"), ("GRU", "gru"), ("RNN", "rnn_tanh")])
@pytest.mark.parametrize("bf", [False, True])
@pytest.mark.parametrize("bi", [False, True])
def test_data_free_and_real_runs_record_one_call_alike(
    tmp_path: Path, cls: str, op: str, bf: bool, bi: bool
) -> None:
    source = source_for_file(_model(tmp_path, cls, bf=bf, bi=bi))
    free, real = capture_program(source), capture_program(source, real=True)
    assert [c.target for c in free.calls] == [c.target for c in real.calls]
    assert [c.target for c in free.calls].count(f"aten.{op}.input") == 1
    (call,) = (c for c in free.calls if c.target == f"aten.{op}.input")
    (real_call,) = (c for c in real.calls if c.target == f"aten.{op}.input")
    assert [(m.shape, m.stride) for m in call.outputs if m] == [
        (m.shape, m.stride) for m in real_call.outputs if m
    ]
    assert not free.info.used_real_values


def test_calls_do_not_grow_with_the_sequence(tmp_path: Path) -> None:
    short = capture_program(source_for_file(_model(tmp_path, "GRU", bf=False, bi=True, seq=4)))
    long = capture_program(source_for_file(_model(tmp_path, "GRU", bf=False, bi=True, seq=64)))
    assert len(short.calls) == len(long.calls) == 6  # zeros, gru, view, t, addmm, view
    assert len(lower_capture(long).program.kernels) == len(lower_capture(short).program.kernels)


def test_lstm_with_projections_keeps_its_decomposition(tmp_path: Path) -> None:
    path = _model(tmp_path, "LSTM", bf=False, bi=False, extra=", proj_size=3")
    capture = capture_program(source_for_file(path))
    targets = {c.target for c in capture.calls}
    assert "aten.lstm.input" not in targets
    assert "aten.addmm.default" in targets or "aten.mm.default" in targets
    assert lower_capture(capture).coverage == ()
