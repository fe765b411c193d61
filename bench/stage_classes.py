#!/usr/bin/env python3
"""Where a model's GPU time goes, by kind of stage.

    bench/stage_classes.py BENCH.json MODEL.txt

BENCH.json: `imrestore ... --bench N --json` (its "bench_ms": each stage's
median, keyed "stage NAME OP"); MODEL.txt: `imrestore model FILE` of the same
model (each stage's line gives its kernel size and channels; a stage the
runner fused runs under the name of the stage folded into it, and is
classed as both ops, "depthwise_conv2d + simple_gate"). Prints, per class (the op, and for convolutions
the kernel and stride), the stages, their summed median and share, then the
ten slowest stages.
"""
import json
import re
import sys


def stage_lines(model_txt):
    """Stage name -> its description (the text after the op name)."""
    out = {}
    for line in open(model_txt):
        m = re.match(r"^\s*\d+\s+(\S+)\s+<-\s+\S+\s+\S+\s+[\d.]+\s+(\w+)\s+(.*)$", line.rstrip())
        if m:
            out[m.group(1)] = (m.group(2), m.group(3))
    return out


def stage_class(op, listed_op, what):
    """op: the stage as the runner ran it; listed_op, what: the file's stage of
    that name (a fused stage takes the name of the one folded into it)."""
    if listed_op != op:
        return f"{op} + {listed_op}"
    if op in ("conv2d", "conv_transpose2d"):
        k = re.search(r"(\d+x\d+)", what)
        kind = k.group(1) if k else "?"
        if "stride 2" in what:
            kind += " stride 2"
        return f"{op} {kind}"
    return op


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    bench = json.load(open(sys.argv[1])).get("bench_ms", {})
    lines = stage_lines(sys.argv[2])
    rows = []
    for key, v in bench.items():
        parts = key.split(" ")
        if parts[0] != "stage" or len(parts) < 3:
            continue
        name, op = parts[1], parts[2]
        listed_op, what = lines.get(name, (op, ""))
        rows.append((name, stage_class(op, listed_op, what), v["median_ms"], what))
    if not rows:
        sys.exit(f"{sys.argv[1]}: no stage timings (was it run with --bench?)")
    total = sum(r[2] for r in rows)
    classes = {}
    for _, cls, ms, _ in rows:
        n, t = classes.get(cls, (0, 0.0))
        classes[cls] = (n + 1, t + ms)
    print(f"{'class':32} {'stages':>6} {'ms':>9} {'share':>6}")
    for cls, (n, t) in sorted(classes.items(), key=lambda kv: -kv[1][1]):
        print(f"{cls:32} {n:6d} {t:9.2f} {100 * t / total:5.1f}%")
    print(f"{'total':32} {len(rows):6d} {total:9.2f}")
    print("slowest stages:")
    for name, cls, ms, what in sorted(rows, key=lambda r: -r[2])[:10]:
        print(f"  {ms:7.3f} ms  {name:28} {what[:70]}")


if __name__ == "__main__":
    main()
