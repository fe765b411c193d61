#!/usr/bin/env python3
"""Peak memory of one command: host RSS and, on a GPU host, GPU memory.

    scripts/peak_memory.py [--json FILE] [--label TEXT] -- COMMAND...

Host: the command's peak resident set (wait4's ru_maxrss, as /usr/bin/time
-v reports it; the nvidia-smi polls are not counted). GPU: nvidia-smi polled every 50 ms while the
command runs: the memory the driver charges to the command's process
(--query-compute-apps; its CUDA context included), else, where the driver
shows no processes (some containers), the rise of the GPU's whole used
memory over what it was just before the start (other processes' changes
included: quote it as such). A poll can miss a peak shorter than 50 ms.
Prints one line; --json appends it as a JSON object to FILE. Exits with the
command's status.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time


def smi(args):
    try:
        out = subprocess.run(["nvidia-smi", *args, "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def gpu_used_mib():
    out = smi(["--query-gpu=memory.used"])
    return sum(int(v) for v in out.split()) if out else None


def process_mib(pid):
    out = smi(["--query-compute-apps=pid,used_memory"])
    if not out:
        return None
    for line in out.strip().splitlines():
        p, _, mib = line.partition(",")
        if p.strip() == str(pid):
            return int(mib)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="append the result to this file (one JSON object a line)")
    ap.add_argument("--label", default="", help="a name for the result")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        ap.error("give the command after --")
    gpu = shutil.which("nvidia-smi") is not None
    base = gpu_used_mib() if gpu else None
    peak = {"process": None, "total_rise": None}
    start = time.monotonic()
    child = subprocess.Popen(cmd)
    done = threading.Event()

    def poll():
        while not done.is_set():
            mine = process_mib(child.pid)
            if mine is not None:
                peak["process"] = max(peak["process"] or 0, mine)
            used = gpu_used_mib()
            if used is not None and base is not None:
                peak["total_rise"] = max(peak["total_rise"] or 0, used - base)
            done.wait(0.05)

    poller = threading.Thread(target=poll, daemon=True)
    if gpu:
        poller.start()
    _, wait_status, usage = os.wait4(child.pid, 0)
    child.returncode = status = os.waitstatus_to_exitcode(wait_status)
    seconds = time.monotonic() - start
    done.set()
    if gpu:
        poller.join()
    rss_mib = usage.ru_maxrss / 1024.0
    result = {"label": a.label, "command": cmd, "status": status, "seconds": round(seconds, 2),
              "host_peak_rss_mib": round(rss_mib, 1)}
    if gpu:
        result["gpu_peak_mib"] = peak["process"] if peak["process"] is not None else peak["total_rise"]
        result["gpu_measure"] = "process" if peak["process"] is not None else "rise of the GPU's total"
    print(json.dumps(result), flush=True)
    if a.json:
        with open(a.json, "a") as f:
            f.write(json.dumps(result) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
