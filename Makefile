# Everyday commands. Each target creates the virtual environment and installs on first use.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
PYTHON_INSTALLED := $(VENV)/.installed
# The product's Java jars, fetched with Maven by `offsets-platform install-jars` (offsets_platform/jars/)
# into the virtual environment's share/offsets-platform/, one folder per set: Apache Kafka's
# (kafka.pom.xml); Delta Lake's Spark jars (delta.pom.xml), which every SparkSession
# offsets_platform.lake.spark builds adds; Spark's s3a connector (s3.pom.xml: hadoop-aws for
# pyspark's Hadoop and the few AWS SDK modules it uses, about 14 MB), which a lake on object
# storage needs (docs/object-storage.md).
JARS_INSTALLED := $(VENV)/.jars-installed
DELTA_JARS_INSTALLED := $(VENV)/.delta-jars-installed
S3_JARS_INSTALLED := $(VENV)/.s3-jars-installed
# Spark's class-data archive (offsets_platform/jars/class_archive.py), built from the installed
# pyspark and Delta jars by a training refresh of about a minute: every Spark the demo, the tests
# and the commands start then maps Spark's classes instead of loading them (about 6 s off the start
# and first refresh of every fresh JVM: benchmarks/README.md, "Spark's class-data archive").
SPARK_CLASSES_INSTALLED := $(VENV)/.spark-classes-installed
INSTALLED := $(PYTHON_INSTALLED) $(JARS_INSTALLED) $(DELTA_JARS_INSTALLED) $(S3_JARS_INSTALLED) $(SPARK_CLASSES_INSTALLED)
# the benchmarks' extra dependencies (pyproject.toml's `bench`), on top of the rest
BENCH_INSTALLED := $(VENV)/.bench-installed

.PHONY: demo test test-fast test-object-storage lint bench bench-models fault-trials ui spark-server spark-cluster broker validate clean

# The package is installed editable; the checkout's folder goes on the environment's path too, for
# the proving ground (simulator, live workload, demo, fault trials), which the tests, the benchmarks
# and `make demo` use and the wheel leaves out (setup.py).
$(PYTHON_INSTALLED): pyproject.toml setup.py constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	echo "$(CURDIR)" > "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/offsets_platform_checkout.pth"
	touch $@

$(BENCH_INSTALLED): $(PYTHON_INSTALLED)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[bench]'
	touch $@

$(JARS_INSTALLED): offsets_platform/jars/kafka.pom.xml $(PYTHON_INSTALLED)
	$(BIN)/offsets-platform install-jars kafka
	touch $@

$(DELTA_JARS_INSTALLED): offsets_platform/jars/delta.pom.xml $(PYTHON_INSTALLED)
	$(BIN)/offsets-platform install-jars delta
	touch $@

$(S3_JARS_INSTALLED): offsets_platform/jars/s3.pom.xml $(PYTHON_INSTALLED)
	$(BIN)/offsets-platform install-jars s3
	touch $@

$(SPARK_CLASSES_INSTALLED): $(DELTA_JARS_INSTALLED) $(PYTHON_INSTALLED)
	$(BIN)/offsets-platform install-jars spark-classes
	touch $@

demo: $(INSTALLED)  ## the main job on the embedded broker (the proving ground's demo driver)
	$(BIN)/python -m proving_ground.demo

# The object-storage tests run in a pytest process of their own, after the rest: Spark reads the S3
# credentials from its environment when its JVM starts, so their session must start after their server.
# The rest run in TEST_PROCESSES pytest processes (pytest-xdist), each test module whole in one of
# them, so a module's broker starts once: much of a test's time is spent waiting (for a broker or a
# JVM to start, a Delta commit, Kafka's own expiration), and three processes keep two cores busy.
# Each process's Spark driver gets a 2 GB heap rather than 6 GB: the tests' tables are small, and
# three drivers at 6 GB and the tests' brokers and browsers do not fit in 24 GB.
TEST_PROCESSES ?= 3
# The suite starts a broker per test module and uses each for a minute or so: on the JIT's first
# tier only, a start costs about a third less CPU (benchmarks/README.md, "The embedded broker").
TEST_BROKERS = OFFSETS_PLATFORM_BROKER_JVM_OPTIONS=-XX:TieredStopAtLevel=1
test: $(INSTALLED)  ## the whole test suite, the lake on object storage included (installs Debian's chromium, prometheus and prometheus-alertmanager first when missing, for tests/ui and tests/metrics)
	bash .ci/install-debian-packages
	SPARK_LOCAL_IP=127.0.0.1 OFFSETS_PLATFORM_SPARK_DRIVER_MEMORY=2g $(TEST_BROKERS) $(BIN)/python -m pytest --ignore=tests/object_storage -n $(TEST_PROCESSES) --dist loadfile --no-loadscope-reorder
	SPARK_LOCAL_IP=127.0.0.1 $(TEST_BROKERS) $(BIN)/python -m pytest tests/object_storage

test-object-storage: $(INSTALLED)  ## only the lake on a real S3-compatible server (SeaweedFS, started on loopback by the tests), as the second half of make test runs it
	SPARK_LOCAL_IP=127.0.0.1 $(BIN)/python -m pytest tests/object_storage

test-fast: $(INSTALLED)  ## the quick tier, under 2 minutes and without a JVM: pure logic, the codec, the Dagster definitions load, Delta through delta-rs (tests marked fast; one that starts Spark, a broker or any Java fails)
	SPARK_LOCAL_IP=127.0.0.1 $(BIN)/python -m pytest -m fast

lint: $(PYTHON_INSTALLED)  ## ruff, the import contracts in pyproject.toml (the library never imports Dagster or the proving ground), sqlfluff on the models' SQL
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/sqlfluff lint dbt_like_sql

bench: $(INSTALLED) $(BENCH_INSTALLED)  ## the embedded broker's start and memory; decode and ingest speed and memory, side by side (writes benchmarks/results/)
	$(BIN)/python benchmarks/broker_bench.py
	$(BIN)/python benchmarks/ingest_bench.py

bench-models: $(INSTALLED) $(BENCH_INSTALLED)  ## full and incremental model refresh time and memory over 10M records; AGAINST=<commit> times that commit's code side by side (writes benchmarks/results/)
	SPARK_LOCAL_IP=127.0.0.1 $(BIN)/python benchmarks/models_bench.py $(if $(AGAINST),--against $(AGAINST))

fault-trials: $(INSTALLED)  ## ingest and refreshes killed, the broker down, killed, frozen and restarted, every run twice at once (about 20 minutes; docs/fault-trials.md)
	SPARK_LOCAL_IP=127.0.0.1 $(BIN)/python -m proving_ground.fault_trials

# The home the UI reads and keeps its runs in: the lake in $(UI_HOME)/lake, Dagster in $(UI_HOME)/dagster
UI_HOME ?= $(or $(OFFSETS_PLATFORM_HOME),.offsets_platform)
UI_PORT ?= 3000
SPARK_CONNECT_PORT ?= 15002
# The UI's runs (its schedules too) connect to one long-lived Spark Connect server started with it,
# instead of each starting a JVM; the server stops when the UI does.
ui: $(INSTALLED)  ## the Dagster UI and daemon on http://127.0.0.1:$(UI_PORT), with a Spark Connect server; runs persist in $$OFFSETS_PLATFORM_HOME/dagster (.offsets_platform/dagster)
	mkdir -p "$(UI_HOME)/dagster"
	test -f "$(UI_HOME)/dagster/dagster.yaml" || cp assets/dagster.yaml "$(UI_HOME)/dagster/dagster.yaml"
	SPARK_LOCAL_IP=127.0.0.1 $(BIN)/offsets-platform spark-server --port $(SPARK_CONNECT_PORT) & server=$$!; \
	trap 'kill $$server 2>/dev/null; wait $$server' EXIT; \
	DAGSTER_HOME="$(abspath $(UI_HOME))/dagster" OFFSETS_PLATFORM_HOME="$(abspath $(UI_HOME))" SPARK_LOCAL_IP=127.0.0.1 \
		OFFSETS_PLATFORM_SPARK_REMOTE=sc://127.0.0.1:$(SPARK_CONNECT_PORT) \
		$(BIN)/dagster dev -h 127.0.0.1 -p $(UI_PORT) -w workspace.yaml

spark-server: $(INSTALLED)  ## a long-lived Spark Connect server on sc://127.0.0.1:$(SPARK_CONNECT_PORT) (Ctrl-C stops it)
	SPARK_LOCAL_IP=127.0.0.1 $(BIN)/offsets-platform spark-server --port $(SPARK_CONNECT_PORT)

SPARK_MASTER_PORT ?= 7077
spark-cluster: $(INSTALLED)  ## a Spark standalone master and two workers on spark://127.0.0.1:$(SPARK_MASTER_PORT) (Ctrl-C stops them)
	$(BIN)/offsets-platform spark-cluster --port $(SPARK_MASTER_PORT)

BROKER_PORT ?= 9092
broker: $(INSTALLED)  ## Apache Kafka on 127.0.0.1:$(BROKER_PORT), data in .offsets_platform/broker (Ctrl-C stops it)
	$(BIN)/offsets-platform broker --port $(BROKER_PORT)

validate: $(INSTALLED)  ## check the Dagster definitions load
	$(BIN)/dagster definitions validate -w workspace.yaml

clean:
	rm -rf .offsets_platform .pytest_cache
