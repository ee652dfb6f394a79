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

.PHONY: run test build serve lint

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.core: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q '$(TORCH)' $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/pip install -q -e '.[train,dev,ray]'
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
