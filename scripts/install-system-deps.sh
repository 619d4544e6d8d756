#!/usr/bin/env bash
# System packages the test suite can use when present. Every step is optional: this
# script always exits 0, and tests that need a missing tool skip with the install hint.
#   sqldiff  (Debian: sqlite3-tools) is the reference for the envkit full-scan diff tests.
#   chromium renders the HTML report in the browser tests (tests/html/test_browser.py).
set -u

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"; else return 1; fi
}

apt_install() {
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1
}

missing=()
command -v sqldiff >/dev/null 2>&1 || missing+=(sqlite3-tools)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
  || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0

# One index update and one install for both (a fresh CI machine needs both): each
# apt-get update took seconds of `make test`'s budget. One by one only if that fails,
# to say which is missing.
if ! { as_root apt-get update -qq >/dev/null 2>&1 && apt_install "${missing[@]}"; }; then
  for package in "${missing[@]}"; do
    apt_install "$package" \
      || echo "install-system-deps: could not install $package; the tests needing it will skip" >&2
  done
fi
exit 0
