#!/usr/bin/env python3
"""Per-photo comparison of `imrestore eval --json` reports: with --cbm3d
(weights/cbm3d_baseline.py's JSON: the same photos and seed), a noise
report's mean PSNR against CBM3D's on the same photos and the photos below
CBM3D, worst first; with --base, each photo's change against another report
of the same degradation (a model before and after: the noise sigma or the
JPEG quality matched), and for every report the photos worse than its input.

    python3 weights/cbm3d_compare.py EVAL.json... [--cbm3d docs/results/cbm3d-heldout-seed0.json] [--base OLD.json...]
"""
import argparse
import json


def degradation_of(report):
    d = report["degradation"]
    if d.get("jpeg"):
        return f"jpeg {d['jpeg']}"
    return f"noise {int(d['noise'])}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", nargs="+", help="imrestore eval --json reports")
    ap.add_argument("--cbm3d", default=None, help="weights/cbm3d_baseline.py's JSON (noise reports)")
    ap.add_argument("--base", nargs="*", default=[], help="reports of another model, matched by degradation")
    args = ap.parse_args()
    cbm3d = json.load(open(args.cbm3d))["results"] if args.cbm3d else {}
    bases = {}
    for path in args.base:
        b = json.load(open(path))
        bases[degradation_of(b)] = {im["name"]: im["psnr"]["model"] for im in b["images"]}
    for path in args.reports:
        r = json.load(open(path))
        deg = degradation_of(r)
        got = {im["name"]: im["psnr"]["model"] for im in r["images"]}
        worse = sorted((im["psnr"]["model"] - im["psnr"]["input"], im["name"]) for im in r["images"]
                       if im["psnr"]["model"] < im["psnr"]["input"])
        print(f"{path}: {deg}, {len(got)} photos: model {sum(got.values()) / len(got):.3f}; worse than the input: "
              f"{len(worse)}" + "".join(f", {n} {d:+.2f}" for d, n in worse))
        s = deg.split()[1]
        if args.cbm3d and deg.startswith("noise"):
            if s not in cbm3d or any(n not in cbm3d[s] for n in got):
                raise SystemExit(f"{path}: {deg} or one of its photos is not in {args.cbm3d}")
            model = sum(got.values()) / len(got)
            ref = sum(cbm3d[s][n]["output_psnr"] for n in got) / len(got)
            below = sorted((v - cbm3d[s][n]["output_psnr"], n) for n, v in got.items()
                           if v < cbm3d[s][n]["output_psnr"])
            print(f"  CBM3D {ref:.3f}, model - CBM3D {model - ref:+.3f} dB; below CBM3D: {len(below)}"
                  + "".join(f", {n} {d:+.2f}" for d, n in below))
        if deg in bases:
            base = bases[deg]
            d = sorted((v - base[n], n) for n, v in got.items() if n in base)
            changed = ", ".join(f"{n} {v:+.2f}" for v, n in sorted(d, reverse=True) if abs(v) >= 0.005)
            print(f"  against the base: {d[0][0]:+.2f} ({d[0][1]}) to {d[-1][0]:+.2f} ({d[-1][1]}), better on "
                  f"{sum(1 for v, _ in d if v > 0)} of {len(d)}; changed by 0.01 dB or more: {changed or 'none'}")


if __name__ == "__main__":
    main()
