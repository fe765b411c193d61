#include "model_runner.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "finite_check.h"

namespace imr {

namespace {

// Fraction of the backend's free memory a pass may take: the rest stays for
// the driver, other processes and fragmentation.
constexpr double kMemoryShare = 0.7;
// Tile sides tried when an image does not fit: from 16384 (larger than any
// photo, so one tile when memory allows) halving down to 16 (below that the
// halo of a deep model would be most of the work).
constexpr int kLargestTile = 1 << 14;
constexpr int kSmallestTile = 16;

// Copies planes of [h, w] into [hp, wp] (hp >= h, wp >= w), repeating the last
// column and row: the padding to a size multiple (weights/README.md).
void pad_replicate(const float* in, float* out, int planes, int h, int w, int hp, int wp) {
    for (int p = 0; p < planes; ++p) {
        const float* src = in + size_t(p) * h * w;
        float* dst = out + size_t(p) * hp * wp;
        for (int y = 0; y < hp; ++y) {
            const float* row = src + size_t(std::min(y, h - 1)) * w;
            float* o = dst + size_t(y) * wp;
            std::memcpy(o, row, sizeof(float) * size_t(w));
            std::fill(o + w, o + wp, row[w - 1]);
        }
    }
}

}  // namespace

ModelRunner::ModelRunner(ModelFile model, Backend& backend, RunnerOptions options)
    : model_(std::move(model)),
      backend_(backend),
      options_(std::move(options)),
      precision_(resolve_precision(options_.precision, model_, backend)) {
    for (const auto& [op, variant] : options_.forced_variants) backend.force_variant(op, variant);
    for (size_t i = 0; i < model_.stages.size(); ++i) {
        const Stage& s = model_.stages[i];
        prepared_.push_back(std::visit([&](const auto& st) { return st.prepare(backend, precision_); }, s));
        stage_timers_.push_back(backend.make_timer());
        stage_labels_.push_back("stage " + std::to_string(i) + " " + stage_op_name(s));
    }
    io_ = stage_types(prepared_);
    // A half precision no stage computes in (a model of residual blocks
    // only, or a convolution whose neighbours take f32 on both sides) runs
    // in fp32 and is reported so, never as fp32 under another name.
    const TensorType f32{};
    if (precision_ != Precision::Fp32 &&
        std::all_of(io_.begin(), io_.end(), [&](const StageTypes& t) { return t.in == f32 && t.out == f32; }))
        precision_ = Precision::Fp32;
    // Floats of the largest tensor per image pixel, on a side of whole blocks
    // of the size multiple so the ratio is exact; the same for the tensors in
    // other types.
    const int side = 64 * model_.size_multiple();
    const double pixels = double(side) * side;
    activation_floats_per_pixel_ = double(model_.activation_floats(1, side, side)) / pixels;
    const Size typed = typed_tensors({1, model_.channels, side, side});
    typed_per_pixel_ = {size_t(double(typed.bytes) / pixels + 1), size_t(double(typed.elements) / pixels + 1),
                        size_t(double(typed.model_input_bytes) / pixels + 1)};
    if (typed.bytes == 0) typed_per_pixel_ = {};
    upload_timer_ = backend.make_timer();
    download_timer_ = backend.make_timer();
    backend.synchronize();
}

std::vector<ModelRunner::StageTypes> ModelRunner::stage_types(const Stages& stages) {
    std::vector<StageTypes> io;
    const TensorType f32{};
    TensorType before = f32;  // the batch
    for (size_t i = 0; i < stages.size(); ++i) {
        const PreparedStage& p = *stages[i];
        const TensorType type = p.type();
        const bool next_f32 = i + 1 == stages.size() || stages[i + 1]->type() == f32;
        StageTypes t{type, type};
        if (before == f32 && p.reads_f32()) t.in = f32;
        if (next_f32 && p.writes_f32()) t.out = f32;
        io.push_back(t);
        before = t.out;
    }
    return io;
}

ModelRunner::Size ModelRunner::typed_tensors(Shape shape) const {
    Size most;
    const TensorType f32{};
    auto note = [&](const Tensor& t) {
        if (t.type() == f32) return;  // counted by ModelFile::activation_floats
        most.bytes = std::max(most.bytes, t.bytes());
        most.elements = std::max(most.elements, t.stored_count());
    };
    Tensor t = f32_nchw(nullptr, shape);
    for (size_t i = 0; i < model_.stages.size(); ++i) {
        const Stage& s = model_.stages[i];
        const StageTypes io = io_[i];
        t.dtype = io.in.dtype, t.layout = io.in.layout;
        note(t);
        const Geometry g = stage_geometry(s);
        t.shape = {t.shape.n, stage_out_channels(s), t.shape.h / g.down * g.up, t.shape.w / g.down * g.up};
        t.dtype = io.out.dtype, t.layout = io.out.layout;
        note(t);
        if (stage_adds_model_input(s) && io.out != f32)
            most.model_input_bytes =
                std::max(most.model_input_bytes, Tensor{nullptr, shape, io.out.dtype, io.out.layout}.bytes());
    }
    return most;
}

// Two activation buffers (ping, pong) of the largest tensor and, on a device,
// the copy of the input; where stages run in other types, their tensors and
// the model input in their type. (Ops keep only small scratch of their own:
// the CPU conv2d pads bands of a few rows, not whole tensors.)
size_t ModelRunner::bytes_per_pixel() const {
    const double activations = std::max(activation_floats_per_pixel_, double(typed_per_pixel_.bytes) / sizeof(float));
    const double input = backend_.is_host_memory() ? 0.0 : double(model_.channels);
    return size_t(sizeof(float) * (2.0 * activations + input) + double(typed_per_pixel_.model_input_bytes)) + 1;
}

void ModelRunner::reserve(size_t activation_bytes, size_t input_bytes, size_t typed_input_bytes) {
    if (ping_.bytes() < activation_bytes) {
        ping_.reset();  // free before allocating the larger pair
        pong_.reset();
        ping_ = DeviceBuffer(backend_, activation_bytes);
        pong_ = DeviceBuffer(backend_, activation_bytes);
    }
    if (input_.bytes() < input_bytes) {
        input_.reset();
        input_ = DeviceBuffer(backend_, input_bytes);
    }
    if (typed_input_.bytes() < typed_input_bytes) {
        typed_input_.reset();
        typed_input_ = DeviceBuffer(backend_, typed_input_bytes);
    }
}

void ModelRunner::release_buffers() {
    ping_.reset(), pong_.reset(), input_.reset(), typed_input_.reset();
}

void ModelRunner::run(const Tensor& input_tensor, const Tensor& output_tensor, StageTimer* timer) {
    const Shape shape = input_tensor.shape;
    if (shape.c != model_.channels)
        throw Error("model '" + model_.name + "' takes " + std::to_string(model_.channels) + " channels, given " +
                    shape.str());
    for (const Tensor* t : {&input_tensor, &output_tensor})
        if (!*t || t->dtype != DType::F32 || t->layout != Layout::NCHW)
            throw Error("model '" + model_.name + "': the runner takes f32 NCHW host tensors, given " + t->str());
    if (output_tensor.shape != shape)
        throw Error("model '" + model_.name + "': output " + output_tensor.shape.str() + " for input " + shape.str());
    const float* input = input_tensor.as<const float>();
    float* output = output_tensor.as<float>();
    const int m = model_.size_multiple();
    if (shape.h % m == 0 && shape.w % m == 0) return run_aligned(input, output, shape, timer);
    // Pad to the next multiple, run, crop.
    ScopedStage pad(timer, "size padding");
    Shape padded = shape;
    padded.h = (shape.h + m - 1) / m * m, padded.w = (shape.w + m - 1) / m * m;
    std::vector<float> in(padded.count()), out(padded.count());
    pad_replicate(input, in.data(), shape.n * shape.c, shape.h, shape.w, padded.h, padded.w);
    pad.stop();
    run_aligned(in.data(), out.data(), padded, timer);
    ScopedStage crop(timer, "size padding");
    for (int p = 0; p < shape.n * shape.c; ++p)
        for (int y = 0; y < shape.h; ++y)
            std::memcpy(output + (size_t(p) * shape.h + y) * shape.w, &out[(size_t(p) * padded.h + y) * padded.w],
                        sizeof(float) * size_t(shape.w));
}

void ModelRunner::run_aligned(const float* input, float* output, Shape shape, StageTimer* timer) {
    const size_t held = 2 * ping_.bytes() + input_.bytes() + typed_input_.bytes();
    size_t budget = size_t(kMemoryShare * double(backend_.free_memory() + held));
    size_t pixels_fit = budget / bytes_per_pixel();
    // Kernels index tensors with 32-bit integers (the CUDA ones refuse 2^31
    // elements and more): a pass over more pixels than that allows is tiled.
    pixels_fit = std::min(pixels_fit, size_t(double(INT_MAX - 1) / std::max(activation_floats_per_pixel_,
                                                                            double(typed_per_pixel_.elements))));
    size_t image_pixels = size_t(shape.h) * shape.w;
    bool forced = options_.max_tile > 0 && (shape.h > options_.max_tile || shape.w > options_.max_tile);
    if (!forced && image_pixels * shape.n <= pixels_fit) {
        try {
            run_pass(input, output, shape, timer);
            return;
        } catch (const OutOfMemory&) {
            // free_memory() was optimistic (fragmentation, another process):
            // fall through to tiles sized for half of what it claimed.
            release_buffers();
            pixels_fit /= 2;
        }
    }
    // Too large together: one image at a time, tiled if one image is too large.
    // Tiles and halos are multiples of the size multiple, so every tile sees
    // the same pixel blocks as the whole image.
    const int r = model_.radius(), m = model_.size_multiple();
    const int smallest = std::max(kSmallestTile, m);
    int tile = std::max((options_.max_tile > 0 ? options_.max_tile : kLargestTile) / m * m, m);
    size_t plane = size_t(shape.c) * image_pixels;
    for (;;) {
        while (tile > smallest && size_t(tile + 2 * r) * size_t(tile + 2 * r) > pixels_fit)
            tile = std::max(tile / 2 / m * m, m);
        if (size_t(tile + 2 * r) * size_t(tile + 2 * r) > pixels_fit)
            throw OutOfMemory(backend_.name() + ": not enough free memory for even a " + std::to_string(tile) +
                              "-pixel tile of model '" + model_.name + "'");
        try {
            for (int n = 0; n < shape.n; ++n)
                run_tiled(input + n * plane, output + n * plane, {1, shape.c, shape.h, shape.w}, tile, timer);
            return;
        } catch (const OutOfMemory&) {
            release_buffers();
            pixels_fit = size_t(tile) * tile / 4;  // retry with half the tile side
        }
    }
}

void ModelRunner::run_tiled(const float* input, float* output, Shape shape, int tile, StageTimer* timer) {
    const int r = model_.radius(), C = shape.c;
    std::vector<float> tile_in, tile_out;
    for (int y0 = 0; y0 < shape.h; y0 += tile) {
        for (int x0 = 0; x0 < shape.w; x0 += tile) {
            // Core [y0,y1)x[x0,x1) plus a halo of r pixels, clipped to the image:
            // at the image's own edges the model pads exactly as it would untiled.
            int y1 = std::min(shape.h, y0 + tile), x1 = std::min(shape.w, x0 + tile);
            int hy0 = std::max(0, y0 - r), hy1 = std::min(shape.h, y1 + r);
            int hx0 = std::max(0, x0 - r), hx1 = std::min(shape.w, x1 + r);
            Shape ts{1, C, hy1 - hy0, hx1 - hx0};
            if (shape.h == ts.h && shape.w == ts.w) {  // the whole image
                run_pass(input, output, shape, timer);
                return;
            }
            ScopedStage copy_in(timer, "tile copies");
            tile_in.resize(ts.count());
            tile_out.resize(ts.count());
            for (int c = 0; c < C; ++c)
                for (int y = hy0; y < hy1; ++y)
                    std::memcpy(&tile_in[(size_t(c) * ts.h + (y - hy0)) * ts.w],
                                &input[(size_t(c) * shape.h + y) * shape.w + hx0], sizeof(float) * ts.w);
            copy_in.stop();
            run_pass(tile_in.data(), tile_out.data(), ts, timer);
            ScopedStage copy_out(timer, "tile copies");
            for (int c = 0; c < C; ++c)
                for (int y = y0; y < y1; ++y)
                    std::memcpy(&output[(size_t(c) * shape.h + y) * shape.w + x0],
                                &tile_out[(size_t(c) * ts.h + (y - hy0)) * ts.w + (x0 - hx0)],
                                sizeof(float) * (x1 - x0));
        }
    }
}

Tensor ModelRunner::model_input_as(TensorType type, const Tensor& model_input, TensorType& held) {
    if (type == model_input.type()) return model_input;
    const Tensor typed{typed_input_.data(), model_input.shape, type.dtype, type.layout};
    if (held != type) {
        ConvertArgs c;
        c.input = model_input, c.output = typed;
        backend_.convert(c);
        held = type;
    }
    return typed;
}

void ModelRunner::run_pass(const float* input, float* output, Shape shape, StageTimer* timer) {
    const size_t stages = model_.stages.size();
    // On the host the first stage reads `input` (which is also what stages
    // that add the model input add) and the last writes `output` where they
    // run in f32 NCHW; only the activations between stages need buffers. A
    // device backend uploads into input_ and downloads from wherever the last
    // stage wrote. A stage in another type (--precision bf16/fp16 where the
    // backend has the kernels) gets its input converted to the type it reads
    // (io_) first, the model input in the type it writes, and the last
    // stage's output is converted back to the f32 NCHW the caller wants
    // where that stage does not write it itself.
    const bool host = backend_.is_host_memory();
    const Size typed = typed_tensors(shape);
    const size_t activations =
        std::max(model_.activation_floats(shape.n, shape.h, shape.w) * sizeof(float), typed.bytes);
    if (!host || stages > 1 || typed.bytes)
        reserve(activations, host ? 0 : shape.count() * sizeof(float), typed.model_input_bytes);

    Tensor src = f32_nchw(input, shape);
    if (!host) {
        upload_timer_->start();
        src.data = input_.data();
        backend_.upload(src.data, input, src.bytes());
        upload_timer_->stop();
    }
    src = run_stages(prepared_, io_, src, output);
    // A half-precision pass whose output is not finite (an fp16 activation
    // overflowed): the batch again in fp32, with stages prepared for it on
    // the first such batch. The fp32 tensors fit in the buffers reserved
    // (sized for the f32 activations too).
    if ((precision_ == Precision::Fp16 || precision_ == Precision::Bf16) && !all_finite(backend_, src)) {
        if (prepared_fp32_.empty()) {
            // Built aside and kept only whole: a prepare that throws (out of
            // memory) must not leave a partial set for the next batch.
            Stages fp32;
            for (const Stage& s : model_.stages)
                fp32.push_back(std::visit([&](const auto& st) { return st.prepare(backend_, Precision::Fp32); }, s));
            io_fp32_ = stage_types(fp32);
            prepared_fp32_ = std::move(fp32);
        }
        src = run_stages(prepared_fp32_, io_fp32_, f32_nchw(host ? input : input_.as<float>(), shape), output);
        ++fp32_reruns_;
    }
    if (!host) {
        download_timer_->start();
        backend_.download(output, src.data, src.bytes());
        download_timer_->stop();
    }
    backend_.synchronize();
    if (timer) {
        if (!host) timer->add("upload", upload_timer_->elapsed_ms());
        for (size_t i = 0; i < stages; ++i) timer->add(stage_labels_[i], stage_timers_[i]->elapsed_ms());
        if (!host) timer->add("download", download_timer_->elapsed_ms());
    }
}

Tensor ModelRunner::run_stages(const Stages& prepared, const std::vector<StageTypes>& io_types, Tensor src,
                               float* output) {
    const size_t stages = prepared.size();
    const bool host = backend_.is_host_memory();
    const TensorType f32{};
    const Tensor model_input = src;
    TensorType model_input_held = f32;  // the type typed_input_ holds the model input in (f32: none)
    // The activation buffer src is not in: ping, pong alternate.
    auto other = [&](const Tensor& t) { return t.data == ping_.data() ? pong_.data() : ping_.data(); };
    auto convert_to = [&](const Tensor& from, TensorType type, void* into) {
        ConvertArgs c;
        c.input = from, c.output = {into, from.shape, type.dtype, type.layout};
        backend_.convert(c);
        return c.output;
    };
    for (size_t i = 0; i < stages; ++i) {
        const Stage& s = model_.stages[i];
        const Geometry g = stage_geometry(s);
        const StageTypes io = io_types[i];
        const bool last = i + 1 == stages;
        stage_timers_[i]->start();
        if (src.type() != io.in) src = convert_to(src, io.in, other(src));
        const Shape& in = src.shape;
        Tensor dst = src;
        dst.shape = {in.n, stage_out_channels(s), in.h / g.down * g.up, in.w / g.down * g.up};
        dst.dtype = io.out.dtype, dst.layout = io.out.layout;
        // Alternate ping/pong, never writing the buffer being read.
        dst.data = (host && last && io.out == f32) ? output : other(src);
        const Tensor added =
            stage_adds_model_input(s) ? model_input_as(io.out, model_input, model_input_held) : Tensor{};
        prepared[i]->run(backend_, src, dst, added);
        if (last && io.out != f32) dst = convert_to(dst, f32, host ? output : other(dst));
        stage_timers_[i]->stop();
        src = dst;
    }
    return src;
}

}  // namespace imr
