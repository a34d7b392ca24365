# Everyday commands. Each target creates the virtual environment and installs on first use.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed

.PHONY: demo test bench bench-models ui validate clean

$(INSTALLED): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(INSTALLED)

demo: $(INSTALLED)  ## the main job on the embedded broker
	$(BIN)/offsets-platform demo

test: $(INSTALLED)  ## the whole test suite (installs Debian's chromium first when missing, for tests/ui)
	bash .ci/install-chromium
	SPARK_LOCAL_IP=127.0.0.1 $(BIN)/python -m pytest

bench: $(INSTALLED)  ## decode and ingest speed and memory, side by side (writes benchmarks/results/)
	$(BIN)/python benchmarks/ingest_bench.py

bench-models: $(INSTALLED)  ## full and incremental model refresh time and memory over 10M records (writes benchmarks/results/)
	SPARK_LOCAL_IP=127.0.0.1 $(BIN)/python benchmarks/models_bench.py

UI_PORT ?= 3000
ui: $(INSTALLED)  ## the Dagster UI and daemon on http://127.0.0.1:$(UI_PORT); runs persist in .offsets_platform/dagster
	mkdir -p .offsets_platform/dagster
	DAGSTER_HOME="$(CURDIR)/.offsets_platform/dagster" SPARK_LOCAL_IP=127.0.0.1 \
		$(BIN)/dagster dev -h 127.0.0.1 -p $(UI_PORT) -w workspace.yaml

validate: $(INSTALLED)  ## check the Dagster definitions load
	$(BIN)/dagster definitions validate -w workspace.yaml

clean:
	rm -rf .offsets_platform .pytest_cache
