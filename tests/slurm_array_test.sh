#!/usr/bin/env bash
# imrestore as the task of a real Slurm job array: starts a one-node cluster
# of its own (munged, slurmctld, slurmd in the foreground under this script,
# in a temporary folder with their own config, state, sockets and ports;
# two stand-in GPUs made by mknod), submits a 4-task array with --gres=gpu:1
# that restores a nested folder on the CPU, and checks:
#   every input restored exactly once, no temporary file left, each task saw
#   one CUDA_VISIBLE_DEVICES; a re-submission (--array=1-4 instead of 0-3)
#   splits the files the same way, skips every one and changes no file;
#   with three outputs deleted, the array again restores just those three;
#   --array=1,2,7 is refused with a clear message; no daemon is left running.
# Usage: slurm_array_test.sh IMRESTORE_EXE SAMPLES_DIR
# Exits 77 (ctest: skipped) with the reason where it cannot run: the Slurm
# and munge binaries missing (apt-get install slurmctld slurmd slurm-client
# munge; .ci/run installs them) or not root (mknod, slurmd).
set -euo pipefail
exe=$(realpath "$1")
samples=$(realpath "$2")

skip() {
  echo "SKIPPED: $*"
  exit 77
}
for bin in munged mungekey slurmctld slurmd sbatch squeue sinfo python3; do
  command -v "$bin" >/dev/null || skip "$bin is not installed (apt-get install slurmctld slurmd slurm-client munge)"
done
[ "$(id -u)" -eq 0 ] || skip "needs root: the stand-in GPUs are made with mknod and slurmd runs jobs as their user"

work=$(mktemp -d /tmp/imrestore-slurm.XXXXXX)
pids=()
stepds_before=$(ps -C slurmstepd -o pid= | sort || true)
stop_daemons() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
}
on_exit() {
  local rc=$?
  stop_daemons
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
    echo "--- logs ($work)"
    tail -n 20 "$work"/*.log "$work"/logs/* 2>/dev/null || true
  fi
  rm -rf "$work"
  exit $rc
}
trap on_exit EXIT
fail() {
  echo "FAILED: $*"
  exit 1
}

# ---------------------------------------------------------------- the cluster
node=$(hostname -s)
mkdir -p "$work"/{etc,state,spool,dev,logs,seen}
mknod "$work/dev/gpu0" c 195 0
mknod "$work/dev/gpu1" c 195 1
mungekey --create --keyfile="$work/munge.key" 2>/dev/null || skip "mungekey could not make a key"
munged --foreground --force --key-file="$work/munge.key" --socket="$work/munge.sock" \
  --pid-file="$work/munged.pid" --log-file="$work/munged.log" --seed-file="$work/munge.seed" \
  >"$work/logs/munged.out" 2>&1 &
pids+=($!)
# Free ports near a random base (the test may run beside other clusters).
port=$(python3 -c 'import socket
for base in range(20000 + __import__("random").randrange(20000), 65000, 2):
    try:
        a, b = socket.socket(), socket.socket()
        a.bind(("127.0.0.1", base)); b.bind(("127.0.0.1", base + 1)); a.close(); b.close()
        print(base); break
    except OSError:
        pass')
cat >"$work/etc/slurm.conf" <<CONF
ClusterName=imrestoretest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge.sock
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/builtin
# Cores, not whole nodes, are what a task takes (the default hands every
# task all of the node's memory, so they would run one at a time).
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) Gres=gpu:2 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
echo "NodeName=$node Name=gpu File=$work/dev/gpu[0-1]" >"$work/etc/gres.conf"
export SLURM_CONF="$work/etc/slurm.conf"
for _ in $(seq 50); do [ -S "$work/munge.sock" ] && break; sleep 0.1; done
[ -S "$work/munge.sock" ] || fail "munged did not start"
slurmctld -D -i -f "$SLURM_CONF" >"$work/logs/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N "$node" -f "$SLURM_CONF" >"$work/logs/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  state=$(sinfo -h -N -o %t 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.2
done
[ "$state" = idle ] || fail "the node did not come up (state '$state')"

# ---------------------------------------------------------------- the inputs
in="$work/in"
mkdir -p "$in/a/b" "$in/c" "$in/d/e/f"
n=0
for dest in "" a a/b c d/e d/e/f; do
  for s in camera.png chelsea.png rocket.jpg; do
    cp "$samples/$s" "$in/$dest/${dest//\//_}x$n-$s"
    n=$((n + 1))
  done
done

# One array task: which device it was given, then imrestore's report.
cat >"$work/task.sh" <<TASK
#!/bin/bash
echo "\${CUDA_VISIBLE_DEVICES-unset}" >"$work/seen/\$SLURM_ARRAY_JOB_ID-\$SLURM_ARRAY_TASK_ID"
exec "$exe" "$in" -r -o "\$1" -d cpu -m sharpen -j 1 --json
TASK
chmod +x "$work/task.sh"

# submit ARRAY OUT: runs the array to its end; prints the array's job id.
# (Polls squeue itself: sbatch --wait sleeps up to 10 s between looks.)
submit() {
  local id
  id=$(sbatch --parsable --array="$1" --gres=gpu:1 --cpus-per-task=1 \
    --output="$work/logs/%A_%a.json" --error="$work/logs/%A_%a.err" "$work/task.sh" "$2")
  id=${id%%;*}
  # Done when squeue answers (exit 0) with no task left; a failed squeue
  # (slurmctld busy) is not an answer. Sanitizer builds on 2 cores take a
  # while: up to 240 s, then the test fails rather than reading half a run.
  local left
  for _ in $(seq 2400); do
    if left=$(squeue -h -r -j "$id" -o %i 2>/dev/null) && [ -z "$left" ]; then
      echo "$id"
      return
    fi
    sleep 0.1
  done
  fail "array $id ($1) still running after 240 s" >&2
}

# check.py: the reports of one array against the inputs.
cat >"$work/check.py" <<'PY'
import glob, json, os, sys
# EXPECT: the status of every file, or "missing": restored where the file
# named in work/missing.txt was deleted, skipped elsewhere.
work, job, expect = sys.argv[1], sys.argv[2], sys.argv[3]
missing = set(open(work + "/missing.txt").read().split()) if expect == "missing" else set()
inputs = sorted(os.path.relpath(os.path.join(d, f), work + "/in")
                for d, _, fs in os.walk(work + "/in") for f in fs)
seen, shard_of = {}, {}
reports = sorted(glob.glob(f"{work}/logs/{job}_*.json"))
assert len(reports) == 4, f"{len(reports)} reports: {reports}"
for path in reports:
    r = json.load(open(path))
    assert r["schema_version"] == 2, path
    s = r["shard"]
    assert s["source"] == "SLURM_ARRAY_TASK_ID" and s["count"] == 4, s
    assert s["listed"] == len(inputs), (s, len(inputs))
    for f in r["files"]:
        name = os.path.relpath(f["input"], work + "/in")
        want = expect if expect != "missing" else "restored" if name in missing else "skipped"
        assert f["status"] == want, (path, want, f)
        seen[name] = seen.get(name, 0) + 1
        shard_of[name] = s["index"]
assert sorted(seen) == inputs, (sorted(seen), inputs)
assert all(v == 1 for v in seen.values()), seen
assert len(set(shard_of.values())) > 1, "every file in one shard"
json.dump(shard_of, open(f"{work}/shards-{job}.json", "w"), sort_keys=True)
what = expect if expect != "missing" else f"seen ({len(missing)} restored, the rest skipped)"
print(f"array {job}: {len(inputs)} files {what} once each over 4 tasks")
PY

# ---------------------------------------------------------------- the checks
echo "cluster up after ${SECONDS}s"
first=$(submit 0-3 "$work/out")
echo "first array done after ${SECONDS}s"
[ -n "$first" ] || fail "sbatch gave no job id"
python3 "$work/check.py" "$work" "$first" restored || fail "the first array"
outputs=$(find "$work/out" -type f | wc -l)
[ "$outputs" -eq "$n" ] || fail "$outputs outputs for $n inputs"
leftover=$(find "$work/out" -name '.*' | wc -l)
[ "$leftover" -eq 0 ] || fail "temporary files left: $(find "$work/out" -name '.*')"
for f in "$work"/seen/"$first"-*; do
  dev=$(cat "$f")
  [[ "$dev" =~ ^[01]$ ]] || fail "task $(basename "$f") saw CUDA_VISIBLE_DEVICES='$dev', not one device"
done
echo "each task saw one device: $(cat "$work"/seen/"$first"-* | tr '\n' ' ')"

before=$(cd "$work/out" && find . -type f -printf '%p %s %T@\n' | sort; find . -type f -exec md5sum {} + | sort)
again=$(submit 1-4 "$work/out")
python3 "$work/check.py" "$work" "$again" skipped || fail "the re-submission"
after=$(cd "$work/out" && find . -type f -printf '%p %s %T@\n' | sort; find . -type f -exec md5sum {} + | sort)
[ "$before" = "$after" ] || fail "the re-submission changed files"
cmp -s "$work/shards-$first.json" "$work/shards-$again.json" || fail "--array=1-4 split the files otherwise than 0-3"
echo "re-submitted as --array=1-4: the same shards, every file skipped, no file changed"

# Three outputs lost (a task killed before it wrote them): the same array
# again restores those three and nothing else.
(cd "$work/in" && find . -type f | sort | sed -n '2p;9p;17p' | sed 's|^\./||') >"$work/missing.txt"
while read -r f; do rm "$work/out/$f"; done <"$work/missing.txt"
kept=$(cd "$work/out" && find . -type f -exec md5sum {} + | sort)
third=$(submit 0-3 "$work/out")
python3 "$work/check.py" "$work" "$third" missing || fail "the re-submission after losing 3 outputs"
[ "$(find "$work/out" -type f | wc -l)" -eq "$n" ] || fail "not every output is back"
[ "$kept" = "$(cd "$work/out" && find . -type f -exec md5sum {} + | sort | grep -v -F -f "$work/missing.txt")" ] ||
  fail "the re-submission changed outputs that were there"
echo "3 outputs deleted, the array re-submitted: those 3 restored, the rest skipped and unchanged"

odd=$(submit 1,2,7 "$work/odd")
for t in 1 2 7; do
  grep -q "not an arithmetic range" "$work/logs/${odd}_$t.err" ||
    fail "--array=1,2,7 task $t: $(cat "$work/logs/${odd}_$t.err")"
done
[ ! -e "$work/odd" ] || fail "--array=1,2,7 wrote files"
echo "--array=1,2,7: $(head -n 1 "$work/logs/${odd}_2.err")"

stop_daemons
for p in "${pids[@]}"; do
  ! kill -0 "$p" 2>/dev/null || fail "daemon $p still running"
done
pids=()
for _ in $(seq 50); do
  [ "$(ps -C slurmstepd -o pid= | sort || true)" = "$stepds_before" ] && break
  sleep 0.1
done
[ "$(ps -C slurmstepd -o pid= | sort || true)" = "$stepds_before" ] || fail "slurmstepd left running: $(ps -C slurmstepd -o pid=,args=)"
echo "PASSED: Slurm array, $n files, every daemon stopped"
