#!/usr/bin/env bash
# Regenerates actors/core/kafka_broker_config_defs.py, the table of Kafka 2.4's broker config
# definitions, from Kafka 2.4 itself: Maven copies kafka_2.12:2.4.0 and its dependencies (pom.xml)
# into a temp directory, BrokerConfigDump.java prints KafkaConfig's ConfigDef with the dynamic update
# modes and synonyms of DynamicBrokerConfig, and write_table.py writes the module. Needs Java 11+
# and Maven; run from anywhere: ci/kafka24_broker_configs/generate.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mvn -B -q -f "$here/pom.xml" -Dproject.build.directory="$tmp/target" \
  dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/libs" >&2
java -cp "$tmp/libs/*" "$here/BrokerConfigDump.java" 2>/dev/null > "$tmp/defs.tsv"
python3 "$here/write_table.py" < "$tmp/defs.tsv" > "$root/actors/core/kafka_broker_config_defs.py"
echo "wrote $(wc -l < "$tmp/defs.tsv") definitions to actors/core/kafka_broker_config_defs.py" >&2
