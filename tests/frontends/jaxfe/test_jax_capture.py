"""Loading and capturing JAX program files: conventions, naming and error codes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from jax_check import ROOT, check_capture, program_costs

from solar.diagnostics import FrontendError
from solar.frontends.jaxfe import is_jax_file, lower_jaxpr, trace_function, trace_jax_file

pytestmark = pytest.mark.jax


def _write(tmp_path: Path, text: str, name: str = "prog.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


FUNCTION = """
    import jax.numpy as jnp
    import numpy as np

    N = 4

    def f(x, scale, w):
        return jnp.tanh(x * scale) @ w, x.sum()

    def g(x, scale, w):
        return (x * scale)[::2]

    def get_inputs():
        return [np.ones((N, 3), np.float32), 2.0, np.arange(6, dtype=np.float32).reshape(3, 2)]
"""


def test_import_without_jax() -> None:
    code = (
        "import sys; sys.modules['jax'] = None; sys.modules['flax'] = None; "
        "sys.modules['torch'] = None; import solar.frontends.jaxfe as J; "
        "print(J.is_jax_file.__name__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert out.returncode == 0, out.stderr
    assert "is_jax_file" in out.stdout


def test_function_file_naming_and_static_scalars(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    capture = trace_jax_file(_write(tmp_path, FUNCTION))
    assert capture.kind == "function"
    assert capture.input_names == ("x0", "x1")  # the Python scalar 2.0 is static
    assert capture.output_names == ("y0", "y1")
    lowered = check_capture(capture)
    roles = {t.name: t.role for t in lowered.program.tensors}
    assert roles["x0"] == roles["x1"] == "input"
    assert roles["y0"] == roles["y1"] == "output"


def test_entry_and_overrides(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    path = _write(tmp_path, FUNCTION)
    capture = trace_jax_file(path, entry="g", overrides={"N": 6})
    assert capture.abstract_args[0].shape == (6, 3)
    assert capture.closed_jaxpr.out_avals[0].shape == (3, 3)
    check_capture(capture)
    assert trace_jax_file(path, entry=f"{path.stem}:g").output_names == ("y0",)


def test_linen_model_params_and_init_inputs(tmp_path: Path) -> None:
    pytest.importorskip("flax")
    path = _write(
        tmp_path,
        """
        import flax.linen as nn
        import numpy as np

        class Model(nn.Module):
            features: int

            @nn.compact
            def __call__(self, x):
                h = nn.Dense(self.features, name="proj")(x)
                return nn.LayerNorm()(h)

        def get_init_inputs():
            return [5]

        def get_inputs():
            return [np.random.randn(2, 3).astype(np.float32)]
    """,
    )
    capture = trace_jax_file(path)
    assert capture.kind == "linen"
    assert set(capture.param_names) == {
        "p_proj_kernel",
        "p_proj_bias",
        "p_LayerNorm_0_scale",
        "p_LayerNorm_0_bias",
    }
    lowered = check_capture(capture, rtol=1e-4, atol=1e-5)
    assert tuple(name for _, name in lowered.params) == capture.param_names
    assert any(k.name.startswith("proj_") for k in lowered.program.kernels)


TRAIN_MODE_BATCHNORM = {
    "linen": """
        import flax.linen as nn
        import numpy as np

        class Model(nn.Module):
            @nn.compact
            def __call__(self, x):
                return nn.relu(nn.BatchNorm(use_running_average=False)(nn.Dense(8)(x)))

        def get_inputs():
            return [np.random.randn(6, 4).astype(np.float32)]
    """,
    "nnx": """
        from flax import nnx
        import numpy as np

        class Model(nnx.Module):
            def __init__(self, *, rngs):
                self.lin = nnx.Linear(4, 8, rngs=rngs)
                self.bn = nnx.BatchNorm(8, use_running_average=False, rngs=rngs)

            def __call__(self, x):
                return nnx.relu(self.bn(self.lin(x)))

        def get_inputs():
            return [np.random.randn(6, 4).astype(np.float32)]
    """,
}


@pytest.mark.parametrize("kind", list(TRAIN_MODE_BATCHNORM))
def test_train_mode_batchnorm_updates_are_side_effects(tmp_path: Path, kind: str) -> None:
    """Note [Mutable collections]: linen's ``batch_stats`` is mutable during the call (it
    raised ModifyScopeVariableError), and both kinds return the output only."""
    pytest.importorskip("flax")
    capture = trace_jax_file(_write(tmp_path, TRAIN_MODE_BATCHNORM[kind]))
    assert capture.kind == kind
    assert capture.output_names == ("y0",)
    lowered = check_capture(capture, rtol=1e-4, atol=1e-5)
    flops = program_costs(lowered.program)[0]
    # the dense layer (2 * 6 * 4 * 8 + bias 48) and the batch statistics over 6 rows
    assert 2 * 6 * 4 * 8 + 48 + 2 * 6 * 8 < flops < 2 * (2 * 6 * 4 * 8 + 48 + 2 * 6 * 8)


def test_nnx_model(tmp_path: Path) -> None:
    pytest.importorskip("flax")
    path = _write(
        tmp_path,
        """
        from flax import nnx
        import numpy as np

        class Model(nnx.Module):
            def __init__(self, din, dout, *, rngs):
                self.lin = nnx.Linear(din, dout, rngs=rngs)
                self.blocks = nnx.List([nnx.Linear(dout, dout, rngs=rngs)])

            def __call__(self, x):
                return self.blocks[0](nnx.relu(self.lin(x)))

        def get_init_inputs():
            return [4, 6]

        def get_inputs():
            return [np.random.randn(3, 4).astype(np.float32)]
    """,
    )
    capture = trace_jax_file(path)
    assert capture.kind == "nnx"
    assert set(capture.param_names) == {
        "p_lin_kernel",
        "p_lin_bias",
        "p_blocks_0_kernel",
        "p_blocks_0_bias",
    }
    check_capture(capture, rtol=1e-5, atol=1e-5)


def test_trace_function_api() -> None:
    jnp = pytest.importorskip("jax.numpy")
    capture = trace_function(
        lambda a, b: jnp.maximum(a, b), (np.ones(3, np.float32), np.zeros(3, np.float32))
    )
    assert lower_jaxpr(capture).fully_covered


ERRORS = [
    ("missing_file", None, "E0520"),
    ("no_get_inputs", "import jax\ndef f(x):\n    return x\n", "E0522"),
    (
        "no_entry",
        "import jax\nimport numpy as np\ndef get_inputs():\n    return [np.ones(2)]\n",
        "E0523",
    ),
    ("import_raises", "import jax\nraise RuntimeError('boom')\n", "E0521"),
    (
        "get_inputs_raises",
        "import jax\ndef f(x):\n    return x\ndef get_inputs():\n    return [1 / 0]\n",
        "E0521",
    ),
    (
        "no_arrays",
        "import jax\ndef f(x):\n    return x\ndef get_inputs():\n    return [3]\n",
        "E0522",
    ),
    (
        "program_raises",
        "import jax.numpy as jnp\nimport numpy as np\ndef f(x):\n"
        "    return x @ jnp.ones((5, 5))\ndef get_inputs():\n    return [np.ones((2, 3))]\n",
        "E0521",
    ),
    (
        "python_branch_on_data",
        "import numpy as np\nimport jax\ndef f(x):\n"
        "    return x if x.sum() > 0 else -x\ndef get_inputs():\n    return [np.ones(3)]\n",
        "E0526",
    ),
    (
        "bad_entry_module",
        "import jax\nimport numpy as np\ndef get_inputs():\n    return [np.ones(2)]\n",
        "E0524",
    ),
]


@pytest.mark.parametrize(("name", "text", "code"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(tmp_path: Path, name: str, text: str | None, code: str) -> None:
    pytest.importorskip("jax")
    path = tmp_path / "missing.py" if text is None else _write(tmp_path, text)
    entry = "no_such_module_xyz:f" if name == "bad_entry_module" else None
    with pytest.raises(FrontendError) as info:
        trace_jax_file(path, entry=entry)
    assert info.value.code == code
    rendered = info.value.render()
    assert "Traceback" not in rendered
    assert rendered.startswith(f"error[{code}]")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("import jax.numpy as jnp\n", True),
        ("from flax import linen as nn\n", True),
        ("import torch\nimport jax\n", False),
        ("import numpy as np\n", False),
        ("# import jax\nx = 1\n", False),
    ],
)
def test_is_jax_file(tmp_path: Path, text: str, expected: bool) -> None:
    assert is_jax_file(_write(tmp_path, text)) is expected
    assert is_jax_file(tmp_path / "nope.py") is False
