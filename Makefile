# The README's two commands: `make run` (build the default dataset, then serve it) and `make test`.
PYTHON ?= python3
# torch for the tests and CPU training; GPU users follow requirements-gpu.txt instead. pip takes the CPU build where
# its find-links hold one (the project's build machines); elsewhere PyPI's torch is the CUDA one (several GB), so
# pass TORCH_INDEX=https://download.pytorch.org/whl/cpu for the CPU build.
TORCH ?= torch==2.13.0
TORCH_INDEX ?=
VENV := .venv
BIN := $(VENV)/bin
export DVC_NO_ANALYTICS := 1
HOST ?= 127.0.0.1
PORT ?= 7860

# constraints.txt locks every distribution the two commands install (torch and its CUDA runtime aside: TORCH
# above), so any machine builds the same bytes from the same params and runs the tests on the versions they passed
# with; `make lock` re-resolves it from pyproject.toml.
LOCK := constraints.txt

.PHONY: run test build serve lint lock

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.core: pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/pip install -q -c $(LOCK) -e .
	touch $@

$(VENV)/.dev: pyproject.toml $(LOCK) | $(BIN)/python
	$(BIN)/pip install -q '$(TORCH)' $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/pip install -q -c $(LOCK) -e '.[train,dev,ray]'
	touch $@ $(VENV)/.core

# The stages run `python -m ...`: the virtualenv's bin goes first on PATH so they find its interpreter.
build: $(VENV)/.core
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/dvc repro

serve: $(VENV)/.core
	$(BIN)/python -m reward_api --data data/episodes --answers data/answers --host $(HOST) --port $(PORT)

run: build serve

lint: $(VENV)/.dev
	$(BIN)/ruff check .

test: lint
	$(BIN)/pytest

# A throwaway virtualenv resolves pyproject.toml afresh (newest releases within its bounds); its versions become the
# lock. Run it to take up new releases, then `make test`.
lock:
	rm -rf .lock-venv
	$(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install -q --upgrade pip
	.lock-venv/bin/pip install -q '$(TORCH)' $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	.lock-venv/bin/pip install -q -e '.[train,dev,ray]'
	{ echo '# Every distribution `make run` and `make test` install, at the versions the tests passed with: make lock'; \
	  echo '# writes this file (torch is the Makefile'"'"'s TORCH). pyproject.toml keeps lower bounds for other installs.'; \
	  .lock-venv/bin/pip freeze --exclude-editable > .lock-venv/freeze.txt && \
	  grep -iEv '^(torch|triton|nvidia-[a-z0-9-]+|cuda-[a-z0-9-]+)( *==| @)' .lock-venv/freeze.txt; } > $(LOCK).new
	mv $(LOCK).new $(LOCK)
	rm -rf .lock-venv
