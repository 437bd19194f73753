#!/usr/bin/env bash
# Installs the Debian packages pelab needs, when they are missing.
#   scripts/install-deps.sh            build dependencies (libdnnl-dev: the oneDNN
#                                      matrix engine, optional: the build works without)
#   scripts/install-deps.sh --torch    also python3-torch (the PyTorch reference)
#   scripts/install-deps.sh --fuzz     also clang and its libFuzzer runtime
#   scripts/install-deps.sh --mpi      also OpenMPI (make train-mpi, make MPI=1)
#   scripts/install-deps.sh --lab      also the experiment workflow: Snakemake and
#                                      the Python scientific stack (lab/)
#   scripts/install-deps.sh --slurm    also Slurm and munge (make slurm-check)
#   scripts/install-deps.sh --browser  also Chromium (the lab's check of its HTML report)
#   scripts/install-deps.sh --peers    also python3-venv (make bench's peers: bench/peers/venv.sh, from PyPI)
set -euo pipefail
want=(gcc make pkg-config libopenblas-dev libstb-dev zlib1g-dev libdnnl-dev fonts-dejavu-core)
for arg in "$@"; do
    case "$arg" in
        --torch) want+=(python3 python3-torch python3-numpy) ;;
        --fuzz) want+=(clang libclang-rt-14-dev) ;;
        --mpi) want+=(libopenmpi-dev openmpi-bin) ;;
        --peers) want+=(python3 python3-venv) ;;
        --lab) want+=(snakemake python3-pandas python3-scipy python3-statsmodels python3-matplotlib python3-yaml python3-hypothesis) ;;
        --slurm) want+=(slurm-wlm munge) ;;
        --browser) want+=(chromium) ;;
        *) echo "usage: $0 [--torch] [--fuzz] [--mpi] [--lab] [--slurm] [--browser] [--peers]" >&2; exit 2 ;;
    esac
done
missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >/dev/null
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
