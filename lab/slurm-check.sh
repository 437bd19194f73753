#!/usr/bin/env bash
# The workflow on a Slurm cluster: starts a single-node Slurm on this
# machine (munged, slurmctld and slurmd from Debian's slurm-wlm and munge,
# configured in a scratch folder, no accounting), runs the QUICK workflow
# through it with Snakemake's cluster support — every job an sbatch job —
# checks its tables against a local run of the same experiments, and stops
# the daemons. make slurm-check; CI runs it (a few minutes).
#
#   lab/slurm-check.sh [TARGET …]     (default: a few experiments; "all" for every one)
#
# It needs root (the daemons run as root here) and Debian's slurm-wlm and
# munge (scripts/install-deps.sh --slurm; make slurm-check installs them).
# The command it runs the workflow with is the
# one docs/workflow.md gives for a real cluster, with this cluster's partition.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
export PATH="$PATH:/usr/sbin:/sbin"
[ "$(id -u)" -eq 0 ] || { echo "slurm-check: needs root (it starts Slurm's daemons)" >&2; exit 1; }
for c in slurmctld slurmd munged sbatch; do
  command -v "$c" > /dev/null || { echo "slurm-check: no $c; install Slurm: scripts/install-deps.sh --slurm" >&2; exit 1; }
done
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(results/finetune.md results/order_composites.md results/tasks_randpos.md)
text=/usr/share/common-licenses/GPL-3
work=$(mktemp -d /tmp/pelab-slurm.XXXXXX)
chmod 755 "$work"
node=$(hostname -s)
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo) * 8 / 10 ))
mkdir -p "$work/state" "$work/spool" "$work/log"
export SLURM_CONF="$work/slurm.conf"
cat > "$SLURM_CONF" <<EOF
ClusterName=pelab-check
SlurmctldHost=$node
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=pelab Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
munge_socket="$work/munge.socket"
stop() {
  [ -f "$work/slurmd.pid" ] && kill "$(cat "$work/slurmd.pid")" 2>/dev/null
  [ -f "$work/slurmctld.pid" ] && kill "$(cat "$work/slurmctld.pid")" 2>/dev/null
  [ -f "$work/munged.pid" ] && kill "$(cat "$work/munged.pid")" 2>/dev/null
  sleep 1
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap stop EXIT
# munged: its own socket and pid file, so that a munged already running is left alone
mkdir -p /run/munge /var/log/munge /var/lib/munge && chown munge:munge /run/munge /var/log/munge /var/lib/munge
chown munge:munge "$work"
sudo_munge() { setpriv --reuid=munge --regid=munge --init-groups "$@"; }
if ! sudo_munge /usr/sbin/munged --socket="$munge_socket" --pid-file="$work/munged.pid" --log-file="$work/munged.log" \
       --seed-file="$work/munged.seed" 2> "$work/munged.err"; then
  cat "$work/munged.err" >&2; echo "slurm-check: munged did not start" >&2; exit 1
fi
chown root:root "$work"
# Slurm's munge plugin finds the socket through its AuthInfo setting
sed -i "s|^AuthType=auth/munge|AuthType=auth/munge\nAuthInfo=socket=$munge_socket|" "$SLURM_CONF"
/usr/sbin/slurmctld -f "$SLURM_CONF" || { cat "$work/log/slurmctld.log" >&2; exit 1; }
/usr/sbin/slurmd -f "$SLURM_CONF" || { cat "$work/log/slurmd.log" >&2; exit 1; }
for _ in $(seq 60); do
  state=$(sinfo -h -N -o "%T" 2>/dev/null | head -1)
  [ "$state" = idle ] && break
  sleep 1
done
if [ "${state:-}" != idle ]; then
  echo "slurm-check: the node did not come up (state '${state:-none}')" >&2
  tail -20 "$work/log/slurmctld.log" "$work/log/slurmd.log" >&2; exit 1
fi
echo "slurm-check: single-node Slurm up ($node, $cpus CPUs, partition pelab); running the QUICK workflow through sbatch"
passed=0 failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }
t0=$(date +%s)
# docs/workflow.md's cluster command (lab/run passes the options to Snakemake).
if lab/run --quick --text "$text" "$work/out" -j 8 \
     --cluster "sbatch --parsable --partition=pelab --cpus-per-task={threads} --job-name=pelab-{rule} --output=logs/slurm/%j.out" \
     --cluster-status "$repo/lab/slurm-status" --cluster-cancel scancel --latency-wait 30 \
     "${targets[@]}" > "$work/cluster.log" 2>&1; then
  ok "the QUICK workflow ran through Slurm in $(( $(date +%s) - t0 )) s (${targets[*]})"
else
  tail -40 "$work/cluster.log"; bad "the QUICK workflow ran through Slurm"
fi
n_sbatch=$(grep -c "Submitted job .* with external jobid" "$work/cluster.log" || true)
if [ "$n_sbatch" -gt 0 ]; then ok "its jobs were Slurm jobs ($n_sbatch submitted with sbatch)"; else bad "its jobs were Slurm jobs"; fi
lab/run --quick --text "$text" "$work/local" -j 2 "${targets[@]}" > "$work/local.log" 2>&1
same=1
for t in "${targets[@]}"; do
  csv="${t%.md}.csv"
  # the same numbers as a local run (the columns that time the runs left out)
  if ! cmp -s <(/usr/bin/python3 -c 'import pandas as pd, sys; print(pd.read_csv(sys.argv[1]).drop(columns=["train_seconds", "tokens_per_s"], errors="ignore").to_csv(index=False))' "$work/out/$csv") \
              <(/usr/bin/python3 -c 'import pandas as pd, sys; print(pd.read_csv(sys.argv[1]).drop(columns=["train_seconds", "tokens_per_s"], errors="ignore").to_csv(index=False))' "$work/local/$csv"); then
    same=0; echo "   $csv differs between Slurm and local"
  fi
done
if [ "$same" = 1 ]; then ok "Slurm and local runs give the same tables"; else bad "Slurm and local runs give the same tables"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
