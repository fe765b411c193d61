#!/usr/bin/env python3
"""weights/train.py trains a U-Net of weights/architectures.py on the CPU and
resumes from its own compact checkpoint: drunet-small, 3 steps on a few
synthetic photos, then 2 more from the checkpoint (written with int8 weights
the second time). Checks the checkpoint (compact, no optimizer moments, step,
schedule kept across the resume, calls), that the fp16 round trip leaves the
validation PSNR as it was, the held-out curve (one line per call, cumulative
training seconds), and that the int8 checkpoint loads into the architecture.
With --shards DIR it trains on DIR/train-00.tar and DIR/heldout.tar instead
(the real data, where weights/data/shards exist).

    python3 tests/train_smoke_test.py [--shards weights/data/shards]
(needs torch and torchvision: skipped, exit 77, without them; about 20 s on 2 cores)
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import torch
    from torchvision.io import encode_png
except ImportError as e:  # ctest reports exit code 77 as skipped, with this reason
    print(f"skipped: {e} (needs torch and torchvision)")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WEIGHTS = os.path.join(ROOT, "weights")
TRAIN = os.path.join(WEIGHTS, "train.py")
NAME = "denoise-drunet-small"


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def synthetic_photos(folder, sizes, seed):
    """Smooth colour gradients with a few sharp-edged rectangles, 8-bit PNGs."""
    os.makedirs(folder)
    g = torch.Generator().manual_seed(seed)
    for i, (w, h) in enumerate(sizes):
        y = torch.linspace(0, 1, h).view(1, h, 1)
        x = torch.linspace(0, 1, w).view(1, 1, w)
        c = torch.rand(3, 1, 1, generator=g)
        img = 0.5 + 0.4 * torch.sin(6.28 * (c * x + (1 - c) * y) + 3 * c)
        for _ in range(4):
            x0, y0 = int(torch.randint(0, w - 8, (1,), generator=g)), int(torch.randint(0, h - 8, (1,), generator=g))
            img[:, y0:y0 + h // 3, x0:x0 + w // 3] = torch.rand(3, 1, 1, generator=g)
        u8 = torch.round(img.clamp(0, 1) * 255).to(torch.uint8)
        with open(os.path.join(folder, f"p{i}.png"), "wb") as f:
            f.write(encode_png(u8).numpy().tobytes())


def run(args, tag):
    t0 = time.time()
    p = subprocess.run([sys.executable, TRAIN] + args, capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    print(f"--- {tag}: exit {p.returncode}, {time.time() - t0:.1f} s")
    print(out)
    if p.returncode != 0:
        fail(f"{tag}: train.py exited {p.returncode}")
    return out


def val_psnr(out, step, which):
    """The output PSNR of the log's val line of `step` (which: 0 first, -1 last)."""
    found = re.findall(rf"step {step}: (?:training ends.*?)?val PSNR [0-9.]+ -> ([0-9.]+) dB", out)
    if not found:
        fail(f"no val PSNR line of step {step}")
    return float(found[which])


def check_gray():
    """--gray: crops made gray have R = G = B = the BT.601 luma of the colour
    crop they replace (against float64, within the one level a float32 tie
    can round the other way), on the device path (torch) and the JPEG
    workers' (numpy) alike; a share of 0.5 leaves colour crops too, and no
    share draws nothing (the same crops as before)."""
    import train
    torch.manual_seed(7)
    photos = [torch.randint(0, 256, (3, 41, 53), dtype=torch.uint8), torch.randint(0, 256, (3, 37, 37), dtype=torch.uint8)]
    pp = train.PhotoPatches(photos, 16, torch.device("cpu"))
    pp.to_device()
    colour = pp.crops(64, torch.Generator().manual_seed(3))
    if not torch.equal(colour, pp.crops(64, torch.Generator().manual_seed(3), gray=0.0)):
        fail("--gray 0 changed the crops")
    gray = pp.crops(64, torch.Generator().manual_seed(3), gray=1.0)
    if not (torch.equal(gray[:, 0], gray[:, 1]) and torch.equal(gray[:, 1], gray[:, 2])):
        fail("--gray 1: a crop is not gray")
    c = colour.double()
    ref = torch.round(0.299 * c[:, 0] + 0.587 * c[:, 1] + 0.114 * c[:, 2])
    d = (gray[:, 0].double() - ref).abs()
    if d.max() > 1 or (d > 0).double().mean() > 0.01:
        fail(f"--gray: luma off by up to {d.max():g} from float64 on {(d > 0).double().mean():.3%} of pixels")
    np_gray = torch.from_numpy(train.gray_u8(colour.numpy()))
    if (np_gray.int() - gray.int()).abs().max() > 1:
        fail("--gray: the JPEG workers' gray differs from the device path's by more than one level")
    half = pp.crops(256, torch.Generator().manual_seed(4), gray=0.5)
    is_gray = (half[:, 0] == half[:, 1]).flatten(1).all(1) & (half[:, 1] == half[:, 2]).flatten(1).all(1)
    if not 0.35 < is_gray.double().mean() < 0.65:
        fail(f"--gray 0.5: {is_gray.double().mean():.0%} of the crops are gray")


def check_jpeg_prior():
    """--jpeg-prior: a JPEG worker's job with a prior quality makes the target
    that JPEG of the patch and the input a JPEG of the target (both on the
    patch's 8x8 grid); without one the target is the patch itself; --jpeg-444:
    a job flagged 4:4:4 is that JPEG of the patch. Malformed values are
    refused."""
    import train
    rng = np.random.default_rng()
    h, w, size = 40, 56, 32
    photo = rng.integers(0, 256, (3, h, w), dtype=np.uint8)
    buf = np.zeros((1, 2, 2, 3, size, size), np.uint8)
    train._W.update(flat=photo.reshape(-1), buf=buf, size=size)
    y0, x0, q, prior = 3, 5, 30, 90
    train._jpeg_job(0, [(0, h, w, y0, x0, 0, 0, 0, q, prior, 0, 0), (0, h, w, y0, x0, 1, 0, 0, q, 0, 0, 0)])
    patch = torch.from_numpy(np.ascontiguousarray(photo[:, y0:y0 + size, x0:x0 + size]))
    target = train.jpeg_u8(patch, prior)
    if not np.array_equal(buf[0, 0, 0], target.numpy()) or not np.array_equal(buf[0, 1, 0],
                                                                               train.jpeg_u8(target, q).numpy()):
        fail("--jpeg-prior: the job's target is not the prior JPEG of the patch, or its input not a JPEG of it")
    if np.array_equal(buf[0, 0, 0], patch.numpy()):
        fail("--jpeg-prior: the prior JPEG left the random patch unchanged (the check would not tell)")
    flipped = patch.flip(2)
    if not np.array_equal(buf[0, 0, 1], flipped.numpy()) or not np.array_equal(buf[0, 1, 1],
                                                                                train.jpeg_u8(flipped, q).numpy()):
        fail("no prior: the job's target is not the (flipped) patch itself, or its input not its JPEG")
    # --jpeg-444: a job flagged 4:4:4 is PIL's 4:4:4 JPEG of the patch at that
    # quality (full-resolution chroma), unlike the 4:2:0 one.
    from PIL import Image
    import io
    train._jpeg_job(0, [(0, h, w, y0, x0, 0, 0, 0, q, 0, 1, 0)])
    pil = io.BytesIO()
    Image.fromarray(patch.permute(1, 2, 0).numpy()).save(pil, "JPEG", quality=q, subsampling=0)
    want = np.asarray(Image.open(io.BytesIO(pil.getvalue())).convert("RGB")).transpose(2, 0, 1)
    if np.abs(buf[0, 1, 0].astype(int) - want.astype(int)).max() > 1:  # decoders may differ by a rounding
        fail("--jpeg-444: the job's input is not the 4:4:4 JPEG of the patch")
    if np.array_equal(buf[0, 1, 0], train.jpeg_u8(patch, q).numpy()):
        fail("--jpeg-444: the 4:4:4 JPEG equals the 4:2:0 one (the check would not tell)")
    if not np.array_equal(buf[0, 0, 0], patch.numpy()):
        fail("--jpeg-444: the target is not the patch itself")
    # --gray: a job flagged gray has the gray patch as its target and that
    # patch's JPEG as its input.
    train._jpeg_job(0, [(0, h, w, y0, x0, 0, 0, 0, q, 0, 0, 1)])
    gray = torch.from_numpy(train.gray_u8(patch.numpy()))
    if not np.array_equal(buf[0, 0, 0], gray.numpy()) or not np.array_equal(buf[0, 1, 0],
                                                                             train.jpeg_u8(gray, q).numpy()):
        fail("--gray: the JPEG job's target is not the gray patch, or its input not its JPEG")
    r = subprocess.run([sys.executable, TRAIN, "--task", "deblock", "--out", "/nonexistent", "--jpeg-444", "1.5"],
                       capture_output=True, text=True)
    if r.returncode != 2 or "--jpeg-444" not in r.stderr:
        fail(f"--jpeg-444 1.5: exit {r.returncode}, stderr {r.stderr[-200:]}")
    for bad in ("0,80,95", "0.3,95,80", "0.3,80", "x,1,2", "1.5,80,95"):
        r = subprocess.run([sys.executable, TRAIN, "--task", "deblock", "--out", "/nonexistent", "--jpeg-prior", bad],
                           capture_output=True, text=True)
        if r.returncode != 2 or "--jpeg-prior" not in r.stderr:
            fail(f"--jpeg-prior {bad}: exit {r.returncode}, stderr {r.stderr[-200:]}")


def check_jpeg_q_power():
    """--jpeg-q-power: 1 draws exactly as before (torch.randint's sequence); a
    power keeps every quality in [LO, HI], reaches each end that its rate
    makes all but certain, and draws at the rate float64 gives,
    P(q >= k) = 1 - ((k - LO) / span)^(1/P). Malformed values are refused."""
    import train
    seed = int(np.random.default_rng().integers(1 << 62))
    lo, hi = 5, 95
    train.set_jpeg_q((lo, hi))
    try:
        train.set_jpeg_q_power(1.0)
        if not torch.equal(train.draw_jpeg_q(500, torch.Generator().manual_seed(seed)),
                           torch.randint(lo, hi + 1, (500,), generator=torch.Generator().manual_seed(seed))):
            fail(f"--jpeg-q-power 1 (seed {seed}): not torch.randint's draw")
        n, span = 40000, hi - lo + 1
        for power in (0.5, 2.0):
            train.set_jpeg_q_power(power)
            q = train.draw_jpeg_q(n, torch.Generator().manual_seed(seed))
            if q.dtype != torch.int64 or int(q.min()) < lo or int(q.max()) > hi:
                fail(f"--jpeg-q-power {power} (seed {seed}): drew {q.dtype} in [{int(q.min())}, {int(q.max())}], "
                     f"outside [{lo}, {hi}]")
            # An end drawn at least 30 times on average is missed with probability below e^-30.
            p_lo, p_hi = (1.0 / span) ** (1.0 / power), 1.0 - ((span - 1.0) / span) ** (1.0 / power)
            for end, p, got in ((lo, p_lo, int(q.min())), (hi, p_hi, int(q.max()))):
                if n * p >= 30 and got != end:
                    fail(f"--jpeg-q-power {power} (seed {seed}): quality {end} never drawn in {n} "
                         f"(rate {p:.2e})")
            for k in (20, 50, 80, 90, 95):
                p = 1.0 - ((k - lo) / span) ** (1.0 / power)
                got = float((q >= k).double().mean())
                if abs(got - p) > 6 * (p * (1 - p) / n) ** 0.5:
                    fail(f"--jpeg-q-power {power} (seed {seed}): P(q >= {k}) = {got:.4f}, float64 gives {p:.4f}")
    finally:
        train.set_jpeg_q_power(1.0)
        train.set_jpeg_q(train.JPEG_Q_DEFAULT)
    for task, bad in (("deblock", "0"), ("deblock", "-1"), ("deblock", "11"), ("denoise", "0.5")):
        r = subprocess.run([sys.executable, TRAIN, "--task", task, "--out", "/nonexistent", "--jpeg-q-power", bad],
                           capture_output=True, text=True)
        if r.returncode != 2 or "--jpeg-q-power" not in r.stderr:
            fail(f"--task {task} --jpeg-q-power {bad}: exit {r.returncode}, stderr {r.stderr[-200:]}")


def check_level_input(common, data, h5, tmp):
    """A DRUNet with a level input (FBCNN-style: the noise level or JPEG
    quality as a plane beside the image) starts from a file without one with
    the level's weights zero, so its output is the file's model's at any level;
    it trains, and its file takes the level as an extra input, which the
    numpy forward is given (train.py checks it against torch). A level that
    is not the task's is refused."""
    import architectures
    import imrestore_model as im
    import train
    plain = architectures.build("drunet-small")
    train.init_from_model_file(plain, h5, lambda *a: None)
    leveled = architectures.build("drunet-small", level_input="noise_level")
    train.init_from_model_file(leveled, h5, lambda *a: None)
    x = torch.rand(2, 3, 24, 40)
    with torch.no_grad():
        want = plain(x)
        for v in (0.0, 0.2, 1.0):
            got = train.call_net(leveled, leveled, x, {"noise_level": torch.full((2,), v)})
            if not torch.allclose(got, want, atol=1e-6):
                fail(f"level input added by --init-from: the output at level {v} is not the file's model's")
    kw = '{"level_input": "noise_level"}'
    d4 = os.path.join(tmp, "c4")
    out4 = run(common + data + ["--max-steps", "2", "--arch-kw", kw, "--init-from", h5, "--out", d4],
               "call 4 (a noise-level input, --init-from a file without one)")
    if "with a noise_level input added" not in out4:
        fail("call 4: the log does not say the level input was added")
    if not re.search(r"max \|diff\| [0-9.e-]+", out4) or "WARNING" in out4:
        fail("call 4: the written file was not checked against torch, or differs")
    m = im.read_model(os.path.join(d4, NAME + ".h5"))
    if m.get("extra_inputs") != ["noise_level"]:
        fail(f"call 4: the file's extra inputs are {m.get('extra_inputs')}")
    # The level model's file into the same network with the other level, or none: refused.
    for other in ("jpeg_quality", None):
        try:
            train.init_from_model_file(architectures.build("drunet-small", level_input=other),
                                       os.path.join(d4, NAME + ".h5"), lambda *a: None)
            fail(f"--init-from took a noise_level file into a model with {other}")
        except SystemExit as e:
            if "the file takes noise_level" not in str(e):
                fail(f"--init-from refused a noise_level file into {other} with: {e}")
    r = subprocess.run([sys.executable, TRAIN] + common + data + ["--max-steps", "1", "--arch-kw",
                       '{"level_input": "jpeg_quality"}', "--out", os.path.join(tmp, "c5")],
                       capture_output=True, text=True, timeout=300)
    if r.returncode == 0 or "takes jpeg_quality" not in r.stdout + r.stderr:
        fail(f"a jpeg_quality input for --task denoise: exit {r.returncode}, {(r.stdout + r.stderr)[-300:]}")


def main():
    shards = None
    if len(sys.argv) == 3 and sys.argv[1] == "--shards":
        shards = sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        if shards:
            data = ["--shard", os.path.join(shards, "train-00.tar"),
                    "--heldout-shard", os.path.join(shards, "heldout.tar"), "--eval-photos", "2", "--eval-crop", "64"]
            data2 = ["--shard", os.path.join(shards, "train-01.tar")] + data[2:]
        else:
            synthetic_photos(os.path.join(tmp, "train"), [(96, 80), (80, 96), (120, 72)], 1)
            synthetic_photos(os.path.join(tmp, "heldout"), [(50, 41), (45, 52)], 2)  # not multiples of 8: padding
            data = ["--train-dir", os.path.join(tmp, "train"), "--heldout-dir", os.path.join(tmp, "heldout")]
            data2 = data
        common = ["--task", "denoise", "--arch", "drunet-small", "--device", "cpu", "--cpu-threads", "2",
                  "--batch", "2", "--patch", "32", "--val-count", "4", "--warmup-steps", "2", "--minutes", "3",
                  "--reserve-s", "20", "--log-every-s", "0"]
        d1, d2 = os.path.join(tmp, "c1"), os.path.join(tmp, "c2")
        out1 = run(common + data + ["--max-steps", "3", "--total-train-minutes", "5", "--out", d1], "call 1")
        ck1 = torch.load(os.path.join(d1, NAME + ".ckpt"), map_location="cpu", weights_only=False)
        if ck1.get("compact", {}).get("weights") != "fp16" or "optimizer" in ck1:
            fail(f"call 1: not a compact fp16 checkpoint: {ck1.get('compact')}, optimizer {'optimizer' in ck1}")
        if ck1["step"] != 3 or ck1.get("schedule_seconds") != 300.0 or len(ck1["calls"]) != 1:
            fail(f"call 1: step {ck1['step']}, schedule {ck1.get('schedule_seconds')}, {len(ck1['calls'])} calls")
        if ck1["config"] != {"task": "denoise", "arch": "drunet-small", "arch_kw": {}}:
            fail(f"call 1: config {ck1['config']}")

        out2 = run(common + data2 + ["--max-steps", "5", "--resume", os.path.join(d1, NAME + ".ckpt"),
                                     "--rewarmup-steps", "2", "--ckpt-weights", "int8", "--out", d2], "call 2")
        end1, start2 = val_psnr(out1, 3, -1), val_psnr(out2, 3, 0)
        if abs(end1 - start2) > 0.01:
            fail(f"the fp16 checkpoint changed the validation PSNR: {end1} -> {start2} dB")
        if "lr re-warm-up over 2 steps" not in out2 or "cosine over 300 s" not in out2:
            fail("call 2: no lr re-warm-up, or the stored schedule was not used")
        ck2 = torch.load(os.path.join(d2, NAME + ".ckpt"), map_location="cpu", weights_only=False)
        if ck2.get("compact", {}).get("weights") != "int8" or ck2["step"] != 5 or len(ck2["calls"]) != 2:
            fail(f"call 2: {ck2.get('compact')}, step {ck2['step']}, {len(ck2['calls'])} calls")
        if ck2.get("schedule_seconds") != 300.0:
            fail(f"call 2: schedule {ck2.get('schedule_seconds')} s, not the 300 s of call 1")
        if not 0 < ck2["compact"]["rel_rms_error"] < 2e-2:
            fail(f"call 2: int8 relative RMS weight error {ck2['compact']['rel_rms_error']}")

        sys.path.insert(0, WEIGHTS)
        import architectures
        import train

        model = architectures.build("drunet-small")
        model.load_state_dict(train.decode_compact(ck2["model"]))  # strict: every tensor, right shapes

        with open(os.path.join(d2, NAME + ".curve.jsonl")) as f:
            curve = [json.loads(line) for line in f]
        if [p["call"] for p in curve] != [1, 2] or [p["step"] for p in curve] != [3, 5]:
            fail(f"curve: {curve}")
        if not 0 <= curve[0]["train_seconds"] <= curve[1]["train_seconds"]:
            fail(f"curve: training seconds {[p['train_seconds'] for p in curve]}")
        if sorted(curve[1]["heldout"]) != ["noise 15", "noise 25", "noise 50"]:
            fail(f"curve: levels {sorted(curve[1]['heldout'])}")
        for d in (d1, d2):
            if not os.path.exists(os.path.join(d, NAME + ".f32")):
                fail(f"no {NAME}.f32 in {d}")

        # A new run from call 2's model file (float16 weights, as U-Nets are written): the
        # weights come back as the file holds them, and the provenance says where from.
        import imrestore_model as im
        h5 = os.path.join(d2, NAME + ".h5")
        file_model = im.read_model(h5)
        if file_model["weight_dtype"] != "float16" or file_model["format_version"] != 4:
            fail(f"call 2's model: {file_model['weight_dtype']} weights, format {file_model['format_version']}")
        fresh = architectures.build("drunet-small")
        train.init_from_model_file(fresh, h5, lambda *a: None)
        for st in file_model["stages"]:
            if st.get("weight") is not None:
                got = fresh.get_submodule(st["name"]).weight.detach().numpy()
                if not np.array_equal(got, st["weight"]):
                    fail(f"--init-from: {st['name']}.weight differs from the file's")
        d3 = os.path.join(tmp, "c3")
        # With the PSNR loss and a weight average so slow that it keeps the start:
        # a step moves the raw weights by about the lr (visible in float16), the
        # average by a millionth of that, so the file must hold the start weights.
        out3 = run(common + data + ["--max-steps", "1", "--init-from", h5, "--loss", "psnr", "--ema", "0.999999",
                                    "--gray", "0.5", "--out", d3], "call 3 (--init-from, --loss psnr, --ema, --gray)")
        if "initialized from" not in out3:
            fail("call 3: no 'initialized from' line")
        if "weight average (decay 0.999999)" not in out3:
            fail("call 3: no line on the weight average")
        m3 = im.read_model(os.path.join(d3, NAME + ".h5"))
        prov = m3["provenance"]
        if "started from the weights of " + NAME + ".h5" not in prov:
            fail(f"call 3: the provenance does not name the file it started from: {prov[:300]}")
        if ("PSNR (mean over the batch" not in prov or "moving average (decay 0.999999)" not in prov
                or "50% of the patches made gray first (--gray)" not in prov):
            fail(f"call 3: the provenance does not name the PSNR loss and the average: {prov[-600:]}")
        start = {st["name"]: st["weight"] for st in file_model["stages"] if st.get("weight") is not None}
        for st in m3["stages"]:
            if st.get("weight") is not None and not np.array_equal(st["weight"], start[st["name"]]):
                fail(f"call 3: --ema 0.999999 wrote {st['name']}.weight away from the start weights")
        wrong = architectures.build("nafnet-small")
        try:
            train.init_from_model_file(wrong, h5, lambda *a: None)
            fail("--init-from took a DRUNet's file into a NAFNet")
        except SystemExit as e:
            if "is no parameter" not in str(e):
                fail(f"--init-from refused the wrong architecture with: {e}")

        check_level_input(common, data, h5, tmp)
    check_jpeg_prior()
    check_jpeg_q_power()
    check_gray()
    print(f"PASS: trained 3 steps, resumed from the compact checkpoint (val PSNR {end1:.2f} -> {start2:.2f} dB "
          f"across it), 2 more, int8 checkpoint (relative RMS weight error {ck2['compact']['rel_rms_error']:.1e}) "
          "loads; curve of 2 calls; a new run --init-from the float16 model file")


if __name__ == "__main__":
    main()
