#!/usr/bin/env bash
# Says plainly what this machine lacks before `make` tries to build .venv.
set -u
py="${1:-python3}"
missing=0
if ! command -v "$py" >/dev/null 2>&1; then
  echo "raykafka needs Python 3.10+ ('$py' not found)." >&2; missing=1
elif ! "$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
  echo "raykafka needs Python 3.10+; '$py' is $("$py" --version 2>&1)." >&2; missing=1
elif ! "$py" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  echo "raykafka needs Python's venv and ensurepip modules (Debian: apt-get install python3-venv)." >&2; missing=1
fi
if ! command -v java >/dev/null 2>&1; then
  # Only the Spark load generator needs Java; the cluster and its tests do not.
  echo "note: no 'java' on PATH: the Spark/RayDP load jobs need Java 17 to 22 (Debian: apt-get install openjdk-17-jre-headless)." >&2
fi
if ! command -v mvn >/dev/null 2>&1; then
  # The conformance tests fetch Apache Kafka's jars from Maven Central with Maven (ci/kafka/fetch.sh).
  echo "note: no 'mvn' on PATH: the tests that compare with Apache Kafka will be skipped (Debian: apt-get install maven)." >&2
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  # The KafkaJS wire tests install KafkaJS from npm themselves and are skipped without Node.js.
  echo "note: no 'node'/'npm' on PATH: the KafkaJS tests will be skipped (Debian: apt-get install nodejs npm)." >&2
fi
exit $missing
