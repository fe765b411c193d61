#!/usr/bin/env python3
"""A folder of many tiny images, restored once: time to the first output and
peak memory (issue 19, section 4: listing streams, memory flat in the file
count). docs/performance.md ("A folder of 100,000 files") reports it.

  scripts/bench_many_files.py make DIR N           # N 16x16 PPMs in DIR/gNN/fNN/ (500 a folder)
  scripts/bench_many_files.py run DIR OUT [IMRESTORE] [-- extra args]

`run` starts `/usr/bin/time -v IMRESTORE DIR -r -o OUT -d cpu -m sharpen
--json-lines -q` (OUT removed first), with the JSON Lines report going to a
file that this script polls every millisecond: the first output is the first
"file" record that says "restored" (the record is written after its image),
timed from the process's start. Prints one JSON object: files, seconds to the
first output, wall and CPU (user + system) seconds, peak RSS (MB, GNU time's "Maximum resident set
size"), restored/failed counts.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

PER_FOLDER = 500
FOLDERS_PER_GROUP = 10


def make(root, n):
    header = b"P6\n16 16\n255\n"
    made = 0
    while made < n:
        folder = made // PER_FOLDER
        d = os.path.join(root, "g%03d" % (folder // FOLDERS_PER_GROUP), "f%02d" % (folder % FOLDERS_PER_GROUP))
        os.makedirs(d, exist_ok=True)
        for i in range(min(PER_FOLDER, n - made)):
            k = made + i
            pixels = bytes(((x * 7 + y * 13 + k) & 0xFF) for y in range(16) for x in range(16) for _ in range(3))
            with open(os.path.join(d, "img%06d.ppm" % k), "wb") as f:
                f.write(header + pixels)
        made += min(PER_FOLDER, n - made)


def run(root, out, exe, extra):
    shutil.rmtree(out, ignore_errors=True)
    work = tempfile.mkdtemp()
    report, timing = os.path.join(work, "report.jsonl"), os.path.join(work, "time.txt")
    cmd = ["/usr/bin/time", "-v", "-o", timing, exe, root, "-r", "-o", out, "-d", "cpu", "-m", "sharpen",
           "--json-lines", "-q"] + extra
    with open(report, "wb") as sink:
        start = time.monotonic()
        p = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.DEVNULL)
        first = None
        with open(report, "rb") as src:
            buf = b""
            while first is None and p.poll() is None:
                chunk = src.read()
                if chunk:
                    buf += chunk
                    for line in buf.split(b"\n")[:-1]:
                        if b'"type": "file"' in line and b'"status": "restored"' in line:
                            first = time.monotonic() - start
                            break
                    buf = buf[buf.rfind(b"\n") + 1:]
                else:
                    time.sleep(0.001)
        p.wait()
        wall = time.monotonic() - start
    rss_kb, cpu_s = 0, 0.0
    for line in open(timing):
        if "Maximum resident set size" in line:
            rss_kb = int(line.split(":")[1])
        if "User time (seconds)" in line or "System time (seconds)" in line:
            cpu_s += float(line.split(":")[1])
    summary = {}
    records = 0
    for line in open(report):
        records += 1
        r = json.loads(line)
        if r.get("type") == "summary":
            summary = r["summary"]
        if first is None and r.get("type") == "file" and r.get("status") == "restored":
            first = float("nan")  # ended before the poll saw it
    shutil.rmtree(work)
    print(json.dumps({"files": summary.get("restored", 0) + summary.get("failed", 0) + summary.get("skipped", 0),
                      "first_output_s": round(first, 3) if first is not None else None,
                      "wall_s": round(wall, 2), "cpu_s": round(cpu_s, 2), "peak_rss_mb": round(rss_kb / 1024, 1),
                      "restored": summary.get("restored"), "failed": summary.get("failed"),
                      "report_records": records}))


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) >= 4 and sys.argv[1] == "run":
        rest = sys.argv[4:]
        exe = rest[0] if rest and rest[0] != "--" else os.path.join(os.path.dirname(__file__), "..", "build",
                                                                   "imrestore")
        extra = rest[rest.index("--") + 1:] if "--" in rest else []
        run(sys.argv[2], sys.argv[3], exe, extra)
    else:
        sys.exit(__doc__)
