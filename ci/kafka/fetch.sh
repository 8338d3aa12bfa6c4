#!/usr/bin/env bash
# Copies Apache Kafka's jars (ci/kafka/pom.xml pins the version) and their dependencies into a cache
# outside the repo and prints that libs directory on stdout. Maven keeps its own repository in ~/.m2.
# Idempotent: a complete copy is reused at once; an interrupted fetch leaves nothing half-copied.
# The cache is ${RAYKAFKA_CACHE_DIR:-~/.cache/raykafka}/kafka-<version>-<pom digest>/libs: a changed
# pom.xml (another jar, another version) gets its own copy, and a copy in use is never replaced.
# Exit status 3 with a message when Java or Maven is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")
cache=${RAYKAFKA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/raykafka}
digest=$(sha256sum "$here/pom.xml" | cut -c1-12)
dest="$cache/kafka-$version-$digest"
if [ -f "$dest/complete" ]; then echo "$dest/libs"; exit 0; fi
if ! command -v java >/dev/null 2>&1; then
  echo "Apache Kafka $version needs Java 17+ (Debian: apt-get install openjdk-17-jre-headless)." >&2; exit 3
fi
if ! command -v mvn >/dev/null 2>&1; then
  echo "fetching Apache Kafka $version needs Maven (Debian: apt-get install maven)." >&2; exit 3
fi
mkdir -p "$cache"
exec 9>"$cache/.fetch.lock"
flock 9  # one fetch at a time; whoever waited finds the copy complete
if [ -f "$dest/complete" ]; then echo "$dest/libs"; exit 0; fi
tmp=$(mktemp -d "$cache/.kafka-$version.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "fetching Apache Kafka $version's jars into $dest/libs" >&2
# Maven writes nothing into the repo: the build directory is the temp directory too.
mvn -B -q -f "$here/pom.xml" -Dproject.build.directory="$tmp/target" \
  dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/libs" >&2
rm -rf "$tmp/target" "$dest"
mv "$tmp" "$dest"
trap - EXIT
touch "$dest/complete"
echo "$dest/libs"
