#!/usr/bin/env bash
# Checks that AddressSanitizer's leak detection (LeakSanitizer) works on this
# machine before the SAN=1 suite relies on it: a program that leaks on purpose
# must be reported and end with the exit code ASAN_OPTIONS chooses.
#   scripts/san-check.sh    exit 0: active; exit 1: it cannot work here (says why)
# LeakSanitizer needs ptrace-like access to the process; some sandboxes and
# debuggers forbid it, and then it stops with a fatal error instead of checking.
set -u
cd "$(dirname "$0")/.."
: "${ASAN_OPTIONS:?set ASAN_OPTIONS (as .ci/run does) before calling this}"
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
${CC:-gcc} -g -O0 -fsanitize=address,undefined -fno-omit-frame-pointer -o "$probe/leak_probe" tests/san/leak_probe.c || {
    echo "leak check: cannot build the probe"; exit 1; }
"$probe/leak_probe" >"$probe/out" 2>"$probe/err"
code=$?
want=$(printf '%s' "$ASAN_OPTIONS" | sed -n 's/.*exitcode=\([0-9]*\).*/\1/p')
if grep -q "ERROR: LeakSanitizer: detected memory leaks" "$probe/err" && [ "$code" = "${want:-23}" ]; then
    echo "leak check: ACTIVE (a deliberate 4096-byte leak was reported, exit $code)"
    exit 0
fi
echo "leak check: NOT ACTIVE on this machine (the deliberate leak was not reported; probe exit $code)"
sed 's/^/    /' "$probe/err" | head -5
exit 1
