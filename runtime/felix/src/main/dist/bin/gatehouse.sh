#!/usr/bin/env bash
# Runs this unpacked distribution: bin/gatehouse.sh run [CONFIG.json] [--data DIR] [--control PORT]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "${JAVA_HOME:+$JAVA_HOME/bin/}java" ${JAVA_OPTS:-} -jar "$here/gatehouse-launcher.jar" "$@"
