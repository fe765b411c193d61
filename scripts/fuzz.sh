#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, ASan and UBSan in
# build-fuzz/, and runs each for SECONDS (default 60) from a seed corpus of
# the bundled models, printing executions and any crash.
#   scripts/fuzz.sh [SECONDS] [TARGET...]     targets: fuzz_model_wire fuzz_model_file
#                                             fuzz_image_decode fuzz_image_planes
#                                             fuzz_image_metadata
# Crashers land in build-fuzz/crashes/TARGET/; each one found should become a
# regression test (tests/test_model_file.cpp) before it is fixed.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_model_wire fuzz_model_file fuzz_image_decode fuzz_image_planes fuzz_image_metadata)
build=build-fuzz
mkdir -p "$build"
CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIMRESTORE_FUZZ=ON \
    -DIMRESTORE_WITH_CUDA=OFF -DIMRESTORE_BUILD_TESTS=OFF >"$build/build.log" 2>&1 &&
    cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >>"$build/build.log" 2>&1 || {
    tail -30 "$build/build.log"
    exit 1
}
status=0
for t in "${targets[@]}"; do
    corpus=$build/corpus/$t
    crashes=$build/crashes/$t
    mkdir -p "$corpus" "$crashes"
    max_len=4194304
    if [ "$t" = fuzz_model_file ]; then
        # Small seeds and inputs keep it at tens of executions per second
        # (each one forks the reader): the linear model, 17 KB.
        cp weights/sharpen.h5 "$corpus"/ 2>/dev/null
        max_len=131072
        # A mutated file can make libhdf5 loop: the reader is stopped after
        # this many seconds (60 by default) so the fuzzer moves on.
        export IMRESTORE_MODEL_READ_TIMEOUT=2
        # The reader runs in its syscall sandbox (the target refuses to start
        # without it), where an ASan report cannot start llvm-symbolizer (a
        # new process): reports print module+offset frames instead (the
        # sandbox lets them read /proc/self/maps). Re-run an artifact outside
        # the fuzzer to symbolize a fault of the fuzzer process itself.
        model_asan_options="symbolize=0"
    fi
    if [ "$t" = fuzz_image_decode ]; then
        # Seeds: small crops of the sample photos in every format, gray and
        # color, made with PIL (/usr/bin/python3); the first byte of each
        # input picks the codec and the name the decoder sees.
        /usr/bin/python3 - "$corpus" <<'PY' || echo "   (no PIL: starting from an empty corpus)"
import io, os, sys
from PIL import Image
out = sys.argv[1]
names = ["png", "jpg", "bmp", "tga", "gif", "ppm", "psd", "tif", "webp"]
for sample in ("camera.png", "chelsea.png"):
    im = Image.open(os.path.join("samples", sample)).convert("RGB").crop((40, 40, 72, 64))
    for mode in ("RGB", "L", "RGBA"):
        for i, ext in enumerate(names):
            fmt = {"jpg": "JPEG", "tif": "TIFF", "ppm": "PPM", "tga": "TGA"}.get(ext, ext.upper())
            if ext == "psd":
                continue  # PIL cannot write PSD
            try:
                buf = io.BytesIO()
                im.convert(mode).save(buf, fmt)
            except (OSError, KeyError, ValueError):
                continue
            with open(os.path.join(out, f"{sample[:-4]}-{mode}.{ext}"), "wb") as f:
                f.write(bytes([3 * i]) + buf.getvalue())
# PSD (PIL cannot write it): small composites, gray/RGB, with and without
# alpha, 8/16 bit, raw and PackBits, as app/image/builtin_psd.cpp reads them.
import struct
def psd(w, h, ch, depth, mode, packbits):
    d = b"8BPS" + struct.pack(">H6sHIIHH", 1, b"\0" * 6, ch, h, w, depth, mode) + struct.pack(">IIIH", 0, 0, 0, packbits)
    rb = w * depth // 8
    if packbits:
        d += struct.pack(">" + "H" * (ch * h), *([rb + 1] * (ch * h)))
    for c in range(ch):
        for y in range(h):
            row = bytes((x * 37 + y * 11 + c * 53) % 256 for x in range(rb))
            d += bytes([rb - 1]) + row if packbits else row
    return d
for ch, mode in ((3, 3), (4, 3), (1, 1), (2, 1)):
    for depth in (8, 16):
        for pb in (0, 1):
            with open(os.path.join(out, f"psd-{ch}-{depth}-{pb}.psd"), "wb") as f:
                f.write(bytes([3 * names.index("psd")]) + psd(7, 5, ch, depth, mode, pb))
PY
        max_len=65536
    fi
    if [ "$t" = fuzz_image_metadata ]; then
        # Seeds: small files with an ICC profile and EXIF (orientation 6, an
        # EXIF and a GPS directory) in every container, made with PIL, and
        # the samples (rocket.jpg: Adobe RGB; chelsea.png:
        # iCCP); the first byte picks the container (selector % 4).
        { printf '\x04'; cat samples/rocket.jpg; } >"$corpus"/rocket.jpg
        { printf '\x05'; cat samples/chelsea.png; } >"$corpus"/chelsea.png
        /usr/bin/python3 - "$corpus" <<'PY' || echo "   (no PIL: starting from the samples only)"
import io, os, sys
from PIL import Image, ImageCms
out = sys.argv[1]
icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
for mode in ("RGB", "L"):
    im = Image.open("samples/chelsea.png").convert(mode).crop((40, 40, 56, 52))
    exif = Image.Exif()
    exif[0x010F], exif[0x0112] = "Make", 6
    exif[0x8769] = {0x829A: 1 / 250, 0xA002: im.width, 0xA003: im.height}
    exif[0x8825] = {1: "N"}
    exif = exif.tobytes()  # (PIL's TIFF writer takes directories only from bytes)
    for i, fmt in enumerate(("JPEG", "PNG", "WEBP", "TIFF")):
        if fmt == "WEBP" and mode == "L":
            continue
        buf = io.BytesIO()
        profile = icc if mode == "RGB" else None
        im.save(buf, fmt, exif=exif, **({"icc_profile": profile} if profile else {}))
        with open(os.path.join(out, f"{mode}.{fmt.lower()}"), "wb") as f:
            f.write(bytes([i + (4 if mode == "RGB" else 0) + 8 * 5]) + buf.getvalue())
PY
        max_len=262144
    fi
    echo "== $t: $seconds s"
    # -rss_limit_mb: the reader child has its own limits; this bounds the fuzzer.
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}${model_asan_options:-} \
        "$build/fuzz/$t" "$corpus" -max_total_time="$seconds" -rss_limit_mb=4096 -max_len="$max_len" \
        -artifact_prefix="$crashes/" -print_final_stats=1 >"$build/$t.log" 2>&1
    rc=$?
    model_asan_options=
    grep -a -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/$t.log" | sed "s/^/   /"
    # The whole-file target's reader children report libhdf5's own faults
    # (and die of them); only a fault of the fuzzer process itself fails it
    # (rc != 0, with a crash-* file in the crashes folder).
    echo "   sanitizer reports in reader children (contained): $(grep -a -c "ERROR: AddressSanitizer" "$build/$t.log")"
    [ "$t" = fuzz_model_file ] &&
        echo "   readers stopped by the sandbox (each one: a call libhdf5 made that the allow-list lacks, or an attack): $(grep -a -c "^sandbox stop:" "$build/$t.log")"
    ls "$crashes" | sed "s/^/   artifact: /"
    [ $rc -eq 0 ] || status=1
done
exit $status
