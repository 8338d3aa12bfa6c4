#!/usr/bin/env bash
# Copies Spark's Kafka connector jars (ci/spark-kafka/pom.xml pins the Spark version) into a cache
# outside the repo and prints that jars directory on stdout. Maven keeps its own repository in ~/.m2.
# Idempotent: a complete copy is reused at once; an interrupted fetch leaves nothing half-copied.
# The cache is ${RAYKAFKA_CACHE_DIR:-~/.cache/raykafka}/spark-sql-kafka-<version>-<pom digest>/jars,
# beside Apache Kafka's (ci/kafka/fetch.sh): a changed pom.xml gets its own copy.
# Exit status 3 with a message when Java or Maven is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(sed -n 's:.*<spark.version>\(.*\)</spark.version>.*:\1:p' "$here/pom.xml")
cache=${RAYKAFKA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/raykafka}
digest=$(sha256sum "$here/pom.xml" | cut -c1-12)
dest="$cache/spark-sql-kafka-$version-$digest"
if [ -f "$dest/complete" ]; then echo "$dest/jars"; exit 0; fi
if ! command -v java >/dev/null 2>&1; then
  echo "Spark $version's Kafka connector needs Java 17 (Debian: apt-get install openjdk-17-jre-headless)." >&2; exit 3
fi
if ! command -v mvn >/dev/null 2>&1; then
  echo "fetching Spark $version's Kafka connector needs Maven (Debian: apt-get install maven)." >&2; exit 3
fi
mkdir -p "$cache"
exec 9>"$cache/.fetch.lock"
flock 9  # one fetch at a time; whoever waited finds the copy complete
if [ -f "$dest/complete" ]; then echo "$dest/jars"; exit 0; fi
tmp=$(mktemp -d "$cache/.spark-sql-kafka-$version.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "fetching Spark $version's Kafka connector jars into $dest/jars" >&2
# Maven writes nothing into the repo: the build directory is the temp directory too.
mvn -B -q -f "$here/pom.xml" -Dproject.build.directory="$tmp/target" \
  dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/jars" >&2
rm -rf "$tmp/target" "$dest"
mv "$tmp" "$dest"
trap - EXIT
touch "$dest/complete"
echo "$dest/jars"
