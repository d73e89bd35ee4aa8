# Set-up is part of every target: the first run creates .venv and installs clgrad with its extras.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: train test bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]"
	touch $@

train: $(BIN)/.installed
	$(BIN)/python examples/train_digits.py $(ARGS)

test: $(BIN)/.installed
	$(BIN)/python -m pytest -q tests

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis
