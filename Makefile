# Set-up is part of every target: the first run creates .venv and installs clgrad with its extras.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
BENCH_ARGS ?= --quick

.PHONY: train test lint bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]"
	touch $@

train: $(BIN)/.installed
	$(BIN)/python examples/train_digits.py

test: $(BIN)/.installed
	$(BIN)/python -m pytest -q tests

# The house rules (pyproject.toml [tool.ruff]): what CI checks before the tests.
lint: $(BIN)/.installed
	$(BIN)/ruff check .

# The CPU benchmarks of bench/README.md, results into bench/results (BENCH_ARGS="" for full
# runs; peers such as torch are optional: `pip install -e ".[bench]"`).
bench: $(BIN)/.installed
	for b in gemm conv train_step overhead cold_start; do \
		$(BIN)/python bench/$$b.py $(BENCH_ARGS) || exit 1; done

clean:
	rm -rf $(VENV) runs .pytest_cache .hypothesis
