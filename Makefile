# Set-up is part of every target: the first run creates the venv and installs clgrad with its
# extras (dev: train's progress bars and plot, onnx, the test tools, mpi4py + the mpich wheel).
# make test PYTHON=python3.12 uses .venv-python3.12; make test-matrix runs every version below.
PYTHON ?= python3
VENV ?= $(if $(filter python3,$(PYTHON)),.venv,.venv-$(notdir $(PYTHON)))
BIN := $(VENV)/bin
MATRIX ?= python3.10 python3.11 python3.12 python3.13
BENCH_ARGS ?= --quick

.PHONY: train test test-matrix lint docs dist bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]"
	@# pip writes a wheel's libX.so / libX.so.N as full copies (~300 MB of Intel's runtime)
	$(BIN)/python -m clgrad dedupe-libs $(VENV)
	touch $@

train: $(BIN)/.installed
	$(BIN)/python examples/train_digits.py $(ARGS)

test: $(BIN)/.installed
	$(BIN)/python -m pytest -q tests

test-matrix:
	@for py in $(MATRIX); do \
		echo "== make test PYTHON=$$py"; $(MAKE) --no-print-directory test PYTHON=$$py || exit 1; \
	done

# The house rules (pyproject.toml [tool.ruff]), the layers of docs/internals.md
# (pyproject.toml [tool.importlinter]) and an import graph without cycles (imports inside
# functions included): what CI checks before the tests.
lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python tools/import_graph.py --check

# The API reference and guide pages into site/ (mkdocs.yml); any warning fails the build.
docs: $(BIN)/.installed
	$(BIN)/mkdocs build --strict --quiet

# The release files into dist/: sdist + wheel (python -m build), checked by twine; then the wheel
# installs into a clean venv (build/distcheck, no dependencies: it borrows .venv's numpy and
# pyopencl through PYTHONPATH) and, run outside the checkout, imports and runs a kernel.
dist: $(BIN)/.installed
	rm -rf dist build/distcheck
	$(BIN)/python -m build --no-isolation --outdir dist .
	$(BIN)/twine check --strict dist/*
	$(BIN)/python -m venv --without-pip build/distcheck
	$(BIN)/pip --python build/distcheck/bin/python install -q --no-deps dist/*.whl
	cd build && PYTHONPATH=$$($(abspath $(BIN))/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') \
		distcheck/bin/python -c "import clgrad, pathlib; \
		assert pathlib.Path(clgrad.__file__).is_relative_to(pathlib.Path('distcheck').resolve()), clgrad.__file__; \
		print('dist: clgrad', clgrad.__version__, 'from the wheel:', (clgrad.ones(3) + 1).sum().item())"

# The CPU benchmarks of bench/README.md, results into bench/results (BENCH_ARGS="" for full
# runs; peers such as torch are optional: `pip install -e ".[bench]"`).
bench: $(BIN)/.installed
	for b in gemm conv train_step overhead cold_start; do \
		$(BIN)/python bench/$$b.py $(BENCH_ARGS) || exit 1; done

clean:
	rm -rf .venv .venv-python3* runs .pytest_cache .hypothesis .import_linter_cache site dist build
