#!/usr/bin/env bash
# System packages the test suite can use when present. Every step is optional: this
# script always exits 0, and tests that need a missing tool skip with the install hint.
set -u

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"; else return 1; fi
}

# sqldiff (Debian: sqlite3-tools) is the reference for the envkit full-scan diff tests.
command -v sqldiff >/dev/null 2>&1 || {
  { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq sqlite3-tools; } >/dev/null 2>&1 \
    || echo "install-system-deps: could not install sqlite3-tools; sqldiff tests will skip" >&2
}

# chromium renders the HTML report in the browser tests (tests/html/test_browser.py).
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || {
  { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq chromium; } >/dev/null 2>&1 \
    || echo "install-system-deps: could not install chromium; browser tests will skip" >&2
}
exit 0
