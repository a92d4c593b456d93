#!/usr/bin/env bash
# Spark for the `spark` tests and benchmarks: a Java runtime (Debian's JDK 17 when no java is
# found) and pyspark with its Connect extras (declared in pyproject.toml: the `spark` extra,
# part of `dev`). The local session and the Spark Connect server both run from pyspark's own
# jars. Idempotent and quick when done.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null; then SUDO="sudo"; fi
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  echo "setup_spark: installing Debian package openjdk-17-jdk-headless"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    openjdk-17-jdk-headless >/dev/null
fi
if ! "$PY" -c "import pyspark, grpc, pyarrow, google.protobuf" >/dev/null 2>&1; then
  echo "setup_spark: installing pyspark[connect] (builds the pyspark sdist, about a minute)"
  "$PY" -m pip install -q --disable-pip-version-check -e ".[spark]"
fi
