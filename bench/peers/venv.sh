#!/usr/bin/env bash
# bench/peers/venv.sh — the peers' virtual environment: made once per version
# of bench/peers/requirements.txt under ~/.cache/pelab (XDG_CACHE_HOME), from
# PyPI; prints its python's path (the last line). Needs Debian's python3-venv
# (scripts/install-deps.sh --peers). The suite's PyTorch tests keep Debian's
# python3-torch; this is the bench's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
req="$here/requirements.txt"
hash=$(sha256sum "$req" | cut -c1-12)
venv="${XDG_CACHE_HOME:-$HOME/.cache}/pelab/peers-$hash"
if [ ! -f "$venv/.complete" ]; then
  command -v python3 >/dev/null && python3 -c 'import venv, ensurepip' 2>/dev/null ||
    { echo "bench/peers/venv.sh: no python3-venv; install it with: scripts/install-deps.sh --peers" >&2; exit 1; }
  echo "bench/peers/venv.sh: making $venv from $req (PyPI; PyTorch is a large download)" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req" >&2 ||
    { echo "bench/peers/venv.sh: pip could not install $req (is PyPI reachable?)" >&2; rm -rf "$venv"; exit 1; }
  touch "$venv/.complete"  # a half-made one (an interruption) is made again next time
fi
echo "$venv/bin/python"
