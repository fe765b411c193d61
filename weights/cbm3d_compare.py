#!/usr/bin/env python3
"""Per-photo comparison of `imrestore eval --noise S --json` reports with the
committed CBM3D run (weights/cbm3d_baseline.py's JSON, the same photos and
seed): each report's mean PSNR against CBM3D's on the same photos, and the
photos below CBM3D, worst first; with --base, also each photo's change
against another report at the same sigma (a model before and after).

    python3 weights/cbm3d_compare.py docs/results/cbm3d-heldout-seed0.json EVAL.json... [--base OLD.json...]
"""
import argparse
import json


def sigma_of(report):
    return str(int(report["degradation"]["noise"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cbm3d", help="weights/cbm3d_baseline.py's JSON")
    ap.add_argument("reports", nargs="+", help="imrestore eval --json reports (noise degradations)")
    ap.add_argument("--base", nargs="*", default=[], help="reports of another model, matched by sigma")
    args = ap.parse_args()
    cbm3d = json.load(open(args.cbm3d))["results"]
    bases = {}
    for path in args.base:
        b = json.load(open(path))
        bases[sigma_of(b)] = {im["name"]: im["psnr"]["model"] for im in b["images"]}
    for path in args.reports:
        r = json.load(open(path))
        s = sigma_of(r)
        if s not in cbm3d:
            raise SystemExit(f"{path}: sigma {s} is not in {args.cbm3d}")
        got = {im["name"]: im["psnr"]["model"] for im in r["images"]}
        missing = [n for n in got if n not in cbm3d[s]]
        if missing:
            raise SystemExit(f"{path}: {len(missing)} photo(s) not in the CBM3D run, e.g. {missing[0]}")
        model = sum(got.values()) / len(got)
        ref = sum(cbm3d[s][n]["output_psnr"] for n in got) / len(got)
        below = sorted((v - cbm3d[s][n]["output_psnr"], n) for n, v in got.items() if v < cbm3d[s][n]["output_psnr"])
        print(f"{path}: sigma {s}, {len(got)} photos: model {model:.3f}, CBM3D {ref:.3f}, {model - ref:+.3f} dB; "
              f"below CBM3D: {len(below)}" + "".join(f", {n} {d:+.2f}" for d, n in below))
        if s in bases:
            base = bases[s]
            d = sorted((v - base[n], n) for n, v in got.items() if n in base)
            print(f"  against the base: {d[0][0]:+.2f} ({d[0][1]}) to {d[-1][0]:+.2f} ({d[-1][1]}), "
                  f"better on {sum(1 for v, _ in d if v > 0)} of {len(d)}")


if __name__ == "__main__":
    main()
