# SOLAR developer entry points. `make demo` and `make test` set up .venv themselves.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.solar-installed
ZOO_STAMP := $(VENV)/.solar-zoo-installed

.PHONY: venv zoo demo test test-core lint bench clean

# `make demo` needs SOLAR with torch and jax only; the zoo's model libraries (several
# minutes more on a first install) come with `make test`, whose zoo tests build them.
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# Pin the CPU wheel first: an unpinned torch can pull a multi-GB CUDA build.
	$(PY) -m pip install -q torch==2.13.0 torchvision==0.28.0 timm==1.0.31 transformers==5.25.0 \
		jax==0.10.2 jaxlib==0.10.2
	$(PY) -m pip install -q -e '.[torch,jax,llm,plot,dask,dev]'
	touch $(STAMP)

# The zoo's other model libraries, pinned; if they cannot install, their zoo tests skip.
# SOLAR's own requirements are asked for again after them, so none is left downgraded.
$(ZOO_STAMP): $(STAMP)
	$(PY) -m pip install -q torch==2.13.0 torchvision==0.28.0 jax==0.10.2 jaxlib==0.10.2 \
		torch-geometric==2.8.1 diffusers==0.42.1 monai==1.6.1 ultralytics==8.4.190 \
		open-clip-torch==3.3.0 einops==0.8.2 equinox==0.13.8 mujoco==4.0.1 \
		mujoco-mjx==3.17.0 brax==0.14.2 || echo "some zoo libraries did not install: their zoo tests skip"
	$(PY) -m pip install -q -e '.[torch,jax,llm,plot,dask,dev]'
	touch $(ZOO_STAMP)

venv: $(STAMP)

zoo: $(ZOO_STAMP)

demo: $(STAMP)
	$(VENV)/bin/solar analyze samples/torch/gpt_block.py --arch H100_SXM --arch A100_SXM_80GB \
		--set BATCH=8 --set SEQ=2048 --set D_MODEL=1024 --set HEADS=16 --output demo-report.json

test: $(ZOO_STAMP)
	$(VENV)/bin/ruff check solar tests benchmarks
	$(VENV)/bin/mypy solar
	$(PY) -m pytest -n 2 -q tests solar  # solar: the docstring examples (--doctest-modules)

# The core suite without torch/jax installed: their tests must skip, not fail.
test-core:
	test -x .venv-core/bin/python || $(PYTHON) -m venv .venv-core
	.venv-core/bin/python -m pip install -q -e '.[llm,dev]'
	.venv-core/bin/python -m pytest -n 2 -q -m "not torch and not jax"

lint: $(STAMP)
	$(VENV)/bin/ruff check solar tests benchmarks
	$(VENV)/bin/mypy solar

bench: $(ZOO_STAMP)
	for b in benchmarks/*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .venv-core build dist .pytest_cache .solar-cache
