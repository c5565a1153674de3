#!/usr/bin/env bash
# Installs the Debian packages kjoule builds and tests with (skips apt when all are present).
set -euo pipefail
pkgs="build-essential cmake pkg-config libsqlite3-dev libjansson-dev libzstd-dev libyaml-dev
libcmocka-dev sqlite3 python3 libxgboost-dev xz-utils"
pkgs="$pkgs chromium" # headless browser of the report test (tests/cli/test_report_browser.sh)
pkgs="$pkgs clang"    # the second compiler of the Release build test (tests/build/test_release.sh)
missing=""
for p in $pkgs; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing:$missing"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing
