# The two commands a user needs: `make demo` and `make test`. Both build .venv first.
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
# pytest with Python's fault handler on: a native crash prints every thread's stack (tests/conftest.py).
PYTEST := $(VPY) -X faulthandler -m pytest
STAMP := $(VENV)/.installed

.PHONY: demo demo-no-spark test unit integration chaos bench kafka venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@ci/check_prereqs.sh $(PYTHON)
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -e ".[test]"
	@touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/raykafka load run benchmarks/workloads/demo-leader-kill.yaml --output load-results/demo

demo-no-spark: $(STAMP)
	$(VENV)/bin/raykafka demo

# The unit and scenario tests (pure Python) on two processes (pytest-xdist), then the integration
# tests one at a time (they share one Ray head and the machine's two CPUs). Both parts always run;
# the target fails if either does.
test: $(STAMP)
	@status=0; \
	$(PYTEST) -n 2 tests/unit tests/scenarios || status=$$?; \
	$(PYTEST) tests/integration --durations=0 --durations-min=1 || status=$$?; \
	exit $$status

unit: $(STAMP)
	$(PYTEST) tests/unit tests/scenarios

integration: $(STAMP)
	$(PYTEST) tests/integration

chaos: $(STAMP)
	$(PYTEST) tests -m chaos

bench: $(STAMP)
	$(VPY) -m pip install --quiet -e ".[test,bench]"
	$(VPY) benchmarks/throughput.py --profile default
	$(VPY) benchmarks/failover_time.py
	$(VPY) benchmarks/retention_disk.py
	$(VPY) benchmarks/coordinator_failover.py
	$(VPY) benchmarks/idempotent_produce.py
	$(VPY) benchmarks/spark_produce_throughput.py

# Apache Kafka's jars (ci/kafka/pom.xml pins the version) in ~/.cache/raykafka, for the conformance
# tests and benchmarks that compare with Kafka; the tests fetch them themselves when this was not run.
kafka:
	ci/kafka/fetch.sh

# What raykafka made in this checkout: the venv, build outputs, and what `make demo`, `raykafka load
# run` and `raykafka chaos run` wrote here. Data directories and caches outside it: docs/operations.md.
clean:
	rm -rf $(VENV) build *.egg-info load-results chaos-results
