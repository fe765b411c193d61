#!/usr/bin/env python3
"""Checks the SASS of the tensor-core convolution's pipelined wgmma rows
(TileConfig PIPE_A, kernels/cuda/conv2d_tensor_core.cu): no instruction of the
main loop writes a register that an HGMMA still in flight reads as its A
operand (wgmma's A registers are read after issue, until the
WARPGROUP.DEPBAR that retires its commit group).

    cuobjdump -sass conv2d_tensor_core.cu.o > tc.sass   # an sm_90a object
    scripts/wgmma_sass_check.py tc.sass [--all]

--all checks every wgmma kernel, not only the PIPE_A ones. The loop is
scanned in text order, twice (so the groups in flight at its back edge meet
the next iteration's writes); exit status 1 on a hazard. A static check of
one compiler's output, not a proof: the op tests on the GPU decide.
"""
import re
import sys


def regs(token, width):
    m = re.match(r"R(\d+)$", token)
    return set(range(int(m.group(1)), int(m.group(1)) + width)) if m else set()


def dest_width(op):
    if ".128" in op or (op.startswith("LDSM") and op.endswith(".4")):
        return 4
    if ".64" in op or ".WIDE" in op or (op.startswith("LDSM") and op.endswith(".2")):
        return 2
    return 1


NO_DEST = ("ST", "BRA", "BAR", "ISETP", "UISETP", "EXIT", "NOP", "RED", "ATOM", "DEPBAR", "LDGDEPBAR", "BSYNC",
           "BSSY", "WARPSYNC", "WARPGROUP", "CALL", "RET", "U", "R2UR", "FENCE", "MEMBAR", "CCTL", "ERRBAR")


def check(name, body):
    groups, open_group, hazards = [], set(), []
    for line in body + body:
        toks = line.replace(",", " ").split()
        if toks and toks[0].startswith("@"):
            toks = toks[1:]
        if not toks:
            continue
        op = toks[0]
        if op.startswith("HGMMA"):
            open_group |= regs(toks[2], 4)
            if "gsb0" in line:
                groups.append(open_group)
                open_group = set()
            continue
        if op.startswith("WARPGROUP.DEPBAR"):
            keep = int(toks[-1], 16)
            groups = groups[len(groups) - keep:] if keep else []
            continue
        if len(toks) < 2 or op.startswith(NO_DEST):
            continue
        in_flight = open_group.union(*groups)
        if regs(toks[1], dest_width(op)) & in_flight:
            hazards.append(line)
    return hazards


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    text = "\n" + open(sys.argv[1]).read()
    every = "--all" in sys.argv[2:]
    checked = failed = 0
    for func in re.split(r"\n\s*Function : ", text)[1:]:
        name = func.split("\n", 1)[0].strip()
        m = re.search(r"TileConfigI(.*?)EEE", name)
        if "conv2d_tc_kernel" not in name or not m:
            continue
        flags = re.findall(r"Lb([01])E", name)  # WGMMA, SLICE_WALK, PIPE_A
        if len(flags) < 3 or flags[0] != "1" or (not every and flags[2] != "1"):
            continue
        lines = [re.sub(r"/\*[0-9a-f]+\*/", "", l).split(";")[0].strip()
                 for l in func.split("\n") if re.match(r"\s*/\*[0-9a-f]{4,}\*/", l)]
        starts = [i for i, l in enumerate(lines) if "WARPGROUP.ARRIVE" in l]
        ends = [i for i, l in enumerate(lines) if "DEPBAR.LE gsb0, 0x0" in l]
        if not starts or not ends:
            continue
        hazards = check(name, lines[min(starts):max(ends) + 1])
        checked += 1
        failed += bool(hazards)
        kind = "bf16" if "bfloat16" in name else "f16"
        print(f"{'HAZARD' if hazards else 'ok':6s} TileConfig<{m.group(1)}> {kind}: "
              f"{sum('HGMMA' in l for l in lines)} HGMMA")
        for h in hazards[:4]:
            print("         writes an in-flight A register:", h)
    print(f"{checked} kernels checked, {failed} with hazards")
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
