"""Every `solar ...` command the README, docs/*.md and the `--help` pages show, run as
a user would copy it, or listed with the reason it cannot run here (issue 31, round
three: "each documented command runs as written").

Where commands are found:

* README.md and docs/*.md (but docs/distributed.md, whose console examples its own
  stream checks): every line of an ``sh``/``bash`` block, or of an unlabelled block,
  that starts with ``solar`` (optionally after ``VAR=value`` assignments), backslash
  continuations joined and a trailing ``# remark`` dropped. ``console`` blocks are
  tests/test_readme.py's (they are compared with their output there).
* every command's ``--help`` epilog: its ``$ solar ...`` lines.

Each command is in `RUN` (run with bash from a scratch folder that links the
repository's ``examples``, ``samples`` and ``benchmarks``, so what it writes stays
there; it must exit 0, print no traceback and no FLOP-shortfall warning) or in
`NOT_RUN` with the reason. A new command in the docs that is in neither fails
`test_every_documented_command_is_run_or_says_why`, naming it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
SKIPPED_DOCS = {"distributed.md"}  # its console examples are the distributed stream's
TIMEOUT_S = 900.0
_FENCE = re.compile(r"^```(?P<lang>\w*)\n(?P<body>.*?)^```$", re.DOTALL | re.MULTILINE)
_COMMAND = re.compile(r"^(?:[A-Z_]+=\S+ )*solar \S")


def _commands_of_block(body: str) -> list[str]:
    commands = []
    for line in body.replace("\\\n", " ").splitlines():
        line = line.strip()
        if _COMMAND.match(line):
            commands.append(re.sub(r"\s+", " ", line.split("  #")[0].split(" # ")[0]).strip())
    return commands


def doc_commands() -> dict[str, str]:
    """``{command: where it is shown}`` over README.md and docs/*.md."""
    found: dict[str, str] = {}
    for doc in DOCS:
        if doc.name in SKIPPED_DOCS:
            continue
        text = doc.read_text(encoding="utf-8")
        for block in _FENCE.finditer(text):
            if block.group("lang") not in ("", "sh", "bash"):
                continue
            line = text[: block.start()].count("\n") + 1
            for command in _commands_of_block(block.group("body")):
                found.setdefault(command, f"{doc.relative_to(ROOT)}:{line}")
    return found


def help_commands() -> dict[str, str]:
    """``{command: "solar CMD --help"}`` over every help page's examples."""
    import typer.main

    from solar.cli import app

    found: dict[str, str] = {}

    def visit(cmd: Any, path: tuple[str, ...]) -> None:
        for line in (cmd.epilog or "").splitlines():
            if line.strip().startswith("$ "):
                command = line.strip()[2:].split("  #")[0].strip()
                if _COMMAND.match(command):
                    found.setdefault(command, f"solar {' '.join(path)} --help".replace("  ", " "))
        if hasattr(cmd, "commands"):  # a group (typer's own click: not click.Group)
            for name, sub in cmd.commands.items():
                visit(sub, (*path, name))

    visit(typer.main.get_command(app), ())
    return found


# Commands that run here (the marks say what they need). Analyses of model files are
# `slow`: they run in `make test`, not in the repeated quick pass of .ci/run.
_SLOW_TORCH = (pytest.mark.torch, pytest.mark.slow)
_SLOW_JAX = (pytest.mark.jax, pytest.mark.slow)
RUN: dict[str, tuple[pytest.MarkDecorator, ...]] = {
    "solar ir check samples/ir/*.alir": (),
    "solar ir fmt samples/ir/conv2d.alir": (),
    "solar ir fmt samples/ir/conv2d.alir > conv2d.fmt.alir": (),
    "solar ir run samples/ir/matmul.alir --set M=64 --set N=64 --set K=64": (),
    "solar ir run samples/ir/matmul.alir --inputs examples/matmul_inputs.npz": (),
    "solar ir run samples/ir/matmul.alir --set M=64 -o outputs.npz": (),
    "solar bounds samples/ir/matmul.alir --set M=8192": (),
    "solar bounds samples/ir/matmul.alir --arch H100_SXM --set M=8192": (),
    "solar compare samples/ir/matmul.alir --set M=4096 --set N=4096 --set K=4096": (),
    "solar specs list": (),
    "solar specs show H100_SXM": (),
    "solar specs clusters": (),
    "solar schema": (),
    "solar schema > report.schema.json": (),
    "solar cache clear": (),
    "solar cache clear --llm-cache-dir my-llm-cache/": (),
    "solar sweep samples/ir/transformer_block.alir --set B=1,8,64 --set T=512,2048 "
    "--precision default,bf16": (pytest.mark.slow,),
    "solar sweep samples/ir/transformer_block.alir --arch H100_SXM --arch B200 --set B=1,8,64 "
    "--set T=512,2048 --precision default,bf16 --out sweep/": (pytest.mark.slow,),
    "solar ir fmt samples/ir/matmul.alir": (),
    "solar calibrate -o my_box.yaml": (pytest.mark.slow,),
    "solar analyze examples/kernelbench_mlp.py --arch H100_SXM": _SLOW_TORCH,
    "solar analyze examples/tinynet.py --entry TinyNet --input-shape x=2,8": (pytest.mark.torch,),
    "solar analyze examples/tinynet.py --entry matmul --input-shape 4,8 --input-shape 8,3": (
        pytest.mark.torch,
    ),
    "PYTHONPATH=examples solar analyze --entry tinynet:TinyNet --input-shape x=2,8": (
        pytest.mark.torch,
    ),
    "solar analyze samples/torch/gpt_block.py --arch H100_SXM": _SLOW_TORCH,
    "solar analyze samples/torch/gpt_block.py": _SLOW_TORCH,
    "solar analyze samples/torch/train_cnn.py --train": _SLOW_TORCH,
    "solar analyze samples/torch/train_cnn.py --train --cache cold": _SLOW_TORCH,
    "solar analyze samples/torch/train_mlp.py --train --optimizer adamw --format json": _SLOW_TORCH,
    "solar analyze samples/jax/flax_mlp.py": _SLOW_JAX,
    "solar analyze samples/jax/train_mlp.py --train": _SLOW_JAX,
    "solar analyze samples/jax/train_mlp.py --train --cache cold": _SLOW_JAX,
    "solar analyze examples/kernelbench_mlp.py --arch H100_SXM --arch B200 -o report.json": (
        _SLOW_TORCH
    ),
    "solar analyze examples/kernelbench_mlp.py --arch A100_SXM_80GB --format json -o r.json": (
        _SLOW_TORCH
    ),
    "solar provision examples/kernelbench_mlp.py --target-ms 0.5 --model unfused --format json": (
        _SLOW_TORCH
    ),
    "solar analyze samples/llm/running_max.py --frontend llm --model recorded "
    "--llm-cache-dir samples/llm/cache": (pytest.mark.torch, pytest.mark.slow),
}

_PLACEHOLDER = "names a file of the reader's own (model.py, models/, r.json...): the text says what"
_TOO_LONG = "minutes on two cores"
_DASK = "needs a Dask scheduler at that address"
_LLM = "needs an LLM endpoint"
NOT_RUN: dict[str, str] = {
    "solar analyze mlp.py": "mlp.py is the block above, examples/kernelbench_mlp.py (run)",
    "solar analyze mlp.py --set BATCH=4096 --set DIM=4096 --arch A100_SXM_80GB": (
        "mlp.py is the block above; 4096x4096 validates for minutes on two cores"
    ),
    "solar analyze model.py --arch H100_SXM --arch B200 --output r.json": _PLACEHOLDER,
    "solar analyze model.py --set SEQ=4096 --top 3": _PLACEHOLDER,
    "solar analyze model.py --measure --arch local.yaml": _PLACEHOLDER,
    "solar analyze model.py --measure --arch my_box.yaml": _PLACEHOLDER,
    "solar analyze model.py --inputs inputs.npz": _PLACEHOLDER,
    "solar analyze model.py --frontend llm --model gpt-4.1": _LLM,
    "solar gate r.json --max-headroom 3 --bound fused --require-validated": _PLACEHOLDER,
    "solar gate report.json --max-headroom 3 --bound fused --require-validated": _PLACEHOLDER,
    "solar gate report.json --baseline main.json --max-regression 10 --junit gate.xml": (
        _PLACEHOLDER
    ),
    "solar plot r.json -o roofline.png": _PLACEHOLDER,
    "solar plot r.json -o roofline.svg --arch A100_SXM_80GB": _PLACEHOLDER,
    "solar analyze samples/torch/gpt_block.py -o r.json && solar plot r.json -o roofline.png": (
        "the plot test draws a report (tests/report/test_plot.py)"
    ),
    "solar compare model.py --arch H100_SXM --arch MI300X --arch TPU_v5p": _PLACEHOLDER,
    "solar provision model.py --target-ms 2.0": _PLACEHOLDER,
    "solar specs show my_box.yaml": _PLACEHOLDER,
    "solar specs clusters my_cluster.yaml": _PLACEHOLDER,
    "solar ir validate my.alir --reference ref.npz": _PLACEHOLDER,
    "solar sweep model.py --arch A100_SXM_80GB --arch H100_SXM --set BATCH=1,8,64 "
    "--set SEQ=512..4096:512 --precision default,bf16 --out sweep/": _PLACEHOLDER,
    "solar COMMAND --help": "COMMAND: any command the list above names",
    "solar sweep sweep.yaml --engine dask": _PLACEHOLDER,
    "solar sweep sweep.yaml --engine dask --scheduler tcp://head:8786": _DASK,
    "solar batch samples/torch --workers 2 --out reports/": (
        f"every sample: {_TOO_LONG}; tests/batch runs batches"
    ),
    "solar batch 'models/*.py' --arch A100_SXM_80GB --timeout 300 --max-rss 8000 --resume": (
        _PLACEHOLDER
    ),
    "solar batch models/ --engine dask --scheduler tcp://head:8786": _DASK,
    "solar batch models/ --out reports/ --arch H100_SXM --arch B200 --workers 2 --timeout 600 "
    "--max-rss 8000": _PLACEHOLDER,
    "solar batch 'kernels/**/*.py' --out reports/ --resume": _PLACEHOLDER,
    "solar batch models/ --out reports/ --engine dask --workers 8": _PLACEHOLDER,
    "solar batch models/ --out reports/ --engine dask --scheduler tcp://head:8786": _DASK,
    "solar batch models/ --out reports/ --engine dask --scheduler tcp://10.1.2.3:41235 "
    "--timeout 900 --max-rss 8000": _DASK,
    "solar batch models/ --out reports/ --engine dask --scheduler tcp://$(hostname):8786": _DASK,
    "solar batch models/ --out reports/ --engine dask --scheduler tcp://localhost:8786": _DASK,
    "solar sweep samples/torch/gpt_block.py --set SEQ=512..4096:512 --table csv --out sweep/": (
        f"eight captures of gpt_block: {_TOO_LONG}"
    ),
    "solar sweep samples/torch/gpt_block.py --set BATCH=1,2 --set SEQ=8,16,32 --validate off "
    "--table csv --workers 1": "docs/scale.md's timing recipe; tests/scale sweeps gpt_block",
    "solar batch /tmp/scal --validate off --workers 1 --out out-l1": "docs/scale.md's recipe",
    "solar batch /tmp/scal --validate off --workers 2 --out out-l2": "docs/scale.md's recipe",
    "solar batch /tmp/scal --validate off --engine dask --workers 1 --out out-d1": (
        "docs/scale.md's recipe"
    ),
    "solar batch /tmp/scal --validate off --engine dask --workers 2 --out out-d2": (
        "docs/scale.md's recipe"
    ),
    "solar analyze examples/kernelbench_mlp.py --set BATCH=512 --set DIM=2048": (
        "the README's console example (tests/test_readme.py compares its output)"
    ),
    "solar analyze samples/torch/gpt_block.py --set SEQ=4096 --top 3 --format json": (
        f"gpt_block at 8x4096 tokens: {_TOO_LONG}"
    ),
    "solar bounds samples/torch/gpt_block.py --arch H100_SXM --arch B200 --format json": (
        "captures gpt_block as the analyze example does (run)"
    ),
    "solar compare samples/torch/gpt_block.py --arch H100_SXM --arch MI300X --arch TPU_v5p": (
        "captures gpt_block as the analyze example does (run)"
    ),
    "solar provision samples/torch/gpt_block.py --target-ms 2.0": (
        "captures gpt_block as the analyze example does (run)"
    ),
    "solar analyze benchmarks/distributed/gpt.py --train --validate off --cluster DGX_H100 "
    "--parallel tp=8,pp=8,dp=2 --global-batch 64": f"GPT-3 175B: {_TOO_LONG}",
    "solar analyze benchmarks/distributed/gpt.py --train --validate off --cluster DGX_H100 "
    "--parallel tp=8,pp=4,dp=2 --micro-batch 1 --global-batch 64": f"GPT-3 175B: {_TOO_LONG}",
    "solar sweep benchmarks/distributed/gpt.py --train --validate off --cluster DGX_H100 "
    "--parallel tp=1,2,4,8 --parallel pp=1,2,4 --parallel dp=4 --global-batch 64": (
        f"GPT-3 175B: {_TOO_LONG}"
    ),
    "solar sweep benchmarks/distributed/gpt.py --train --validate off --cluster DGX_H100 "
    "--parallel pp=4,8 --parallel vpp=1,2 --parallel mb=1,2 --global-batch 256 --schedule all "
    "--engine dask": f"GPT-3 175B: {_TOO_LONG}",
    "OPENAI_BASE_URL=http://localhost:8000/v1 solar analyze m.py --frontend llm --model "
    "Qwen/Qwen2.5-Coder-32B-Instruct": _LLM,
    "OPENAI_BASE_URL=http://localhost:8080/v1 solar analyze m.py --frontend llm --model local": (
        _LLM
    ),
    "OPENAI_BASE_URL=http://localhost:11434/v1 solar analyze m.py --frontend llm --model "
    "qwen2.5-coder:32b": _LLM,
}


def all_commands() -> dict[str, str]:
    return {**help_commands(), **doc_commands()}


def test_every_documented_command_is_run_or_says_why() -> None:
    found = all_commands()
    assert len(found) >= 40
    unlisted = {c: where for c, where in found.items() if c not in RUN and c not in NOT_RUN}
    assert not unlisted, (
        "documented commands neither run by this test nor listed with a reason (add each to "
        f"RUN or NOT_RUN in {Path(__file__).relative_to(ROOT)}): {unlisted}"
    )
    stale = sorted(c for c in (*RUN, *NOT_RUN) if c not in found)
    assert not stale, f"listed here but no longer documented: {stale}"


def test_the_tour_shows_one_command_a_line() -> None:
    # `solar specs list / solar specs show H100_SXM` ran as one command: an error
    for command in all_commands():
        assert command.count("solar ") == 1 or "&&" in command, command


def _scratch(tmp_path: Path) -> Path:
    for name in ("examples", "samples", "benchmarks"):
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


@pytest.mark.parametrize(
    "command", [pytest.param(c, marks=marks, id=c[:70]) for c, marks in RUN.items()]
)
def test_documented_command_runs_as_written(command: str, tmp_path: Path) -> None:
    if "torch" in {m.name for m in RUN[command]}:
        pytest.importorskip("torch")
    if "jax" in {m.name for m in RUN[command]}:
        pytest.importorskip("jax")
    if "sweep" in command:
        pytest.importorskip("pyarrow")
    env = dict(os.environ)
    # `solar` is this checkout's CLI: a shell function over this interpreter, this checkout
    # first on the path whatever PYTHONPATH the command sets
    script = (f'solar() {{ PYTHONPATH="{ROOT}${{PYTHONPATH:+:$PYTHONPATH}}" '
              f'"{sys.executable}" -m solar "$@"; }}\n{command}\n')
    done = subprocess.run(
        ["bash", "-c", script], cwd=_scratch(tmp_path), env=env, capture_output=True, text=True,
        timeout=TIMEOUT_S, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    where = all_commands().get(command, "?")
    assert done.returncode == 0, (where, command, done.stdout[-2000:], done.stderr[-3000:])
    text = done.stdout + done.stderr
    assert "Traceback" not in text, (where, text[-3000:])
    assert "FLOP SHORTFALL" not in text, (where, text[-3000:])  # a bug warning in a doc example
