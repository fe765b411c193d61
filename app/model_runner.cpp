#include "model_runner.h"

#include <algorithm>
#include <cstring>

namespace imr {

namespace {
DeviceBuffer upload_vector(Backend& backend, const std::vector<float>& v) {
    if (v.empty()) return {};
    DeviceBuffer buf(backend, v.size());
    backend.upload(buf.data(), v.data(), v.size());
    return buf;
}

// Fraction of the backend's free memory a pass may take: the rest stays for
// the driver, other processes and fragmentation.
constexpr double kMemoryShare = 0.7;
// Tile sides tried when an image does not fit: from 16384 (larger than any
// photo, so one tile when memory allows) halving down to 16 (below that the
// halo of a deep model would be most of the work).
constexpr int kLargestTile = 1 << 14;
constexpr int kSmallestTile = 16;
}  // namespace

ModelRunner::ModelRunner(ModelFile model, Backend& backend) : model_(std::move(model)), backend_(backend) {
    for (size_t i = 0; i < model_.stages.size(); ++i) {
        const Stage& s = model_.stages[i];
        StageWeights w;
        if (auto* rb = std::get_if<ResidualBlockStage>(&s)) {
            w.a = upload_vector(backend, rb->conv_in_weight);
            w.b = upload_vector(backend, rb->conv_in_bias);
            w.c = upload_vector(backend, rb->conv_out_weight);
            w.d = upload_vector(backend, rb->conv_out_bias);
        } else {
            const auto& conv = std::get<Conv2dStage>(s);
            w.a = upload_vector(backend, conv.weight);
            w.b = upload_vector(backend, conv.bias);
        }
        weights_.push_back(std::move(w));
        stage_timers_.push_back(backend.make_timer());
        stage_labels_.push_back("stage " + std::to_string(i) + " " + stage_op_name(s));
    }
    upload_timer_ = backend.make_timer();
    download_timer_ = backend.make_timer();
    backend.synchronize();
}

// Two activation buffers (ping, pong) of the widest tensor, and as much again
// for what an op may allocate itself (the CPU conv2d pads a copy of its input).
size_t ModelRunner::bytes_per_pixel() const {
    return 3 * sizeof(float) * size_t(model_.max_channels());
}

void ModelRunner::reserve(size_t count) {
    if (ping_.count() >= count) return;
    ping_.reset();  // free before allocating the larger pair
    pong_.reset();
    ping_ = DeviceBuffer(backend_, count);
    pong_ = DeviceBuffer(backend_, count);
}

void ModelRunner::run(const float* input, float* output, Shape shape, StageTimer* timer) {
    if (shape.c != model_.channels)
        throw Error("model '" + model_.name + "' takes " + std::to_string(model_.channels) + " channels, given " +
                    shape.str());
    size_t budget = size_t(kMemoryShare * double(backend_.free_memory() + 2 * ping_.count() * sizeof(float)));
    size_t pixels_fit = budget / bytes_per_pixel();
    size_t image_pixels = size_t(shape.h) * shape.w;
    bool forced = max_tile_ > 0 && (shape.h > max_tile_ || shape.w > max_tile_);
    if (!forced && image_pixels * shape.n <= pixels_fit) {
        try {
            run_pass(input, output, shape, timer);
            return;
        } catch (const OutOfMemory&) {
            // free_memory() was optimistic (fragmentation, another process):
            // fall through to tiles sized for half of what it claimed.
            ping_.reset(), pong_.reset();
            pixels_fit /= 2;
        }
    }
    // Too large together: one image at a time, tiled if one image is too large.
    const int r = model_.radius();
    int tile = max_tile_ > 0 ? max_tile_ : kLargestTile;
    size_t plane = size_t(shape.c) * image_pixels;
    for (;;) {
        while (tile > kSmallestTile && size_t(tile + 2 * r) * size_t(tile + 2 * r) > pixels_fit) tile /= 2;
        if (size_t(tile + 2 * r) * size_t(tile + 2 * r) > pixels_fit)
            throw OutOfMemory(backend_.name() + ": not enough free memory for even a " + std::to_string(tile) +
                              "-pixel tile of model '" + model_.name + "'");
        try {
            for (int n = 0; n < shape.n; ++n)
                run_tiled(input + n * plane, output + n * plane, {1, shape.c, shape.h, shape.w}, tile, timer);
            return;
        } catch (const OutOfMemory&) {
            ping_.reset(), pong_.reset();
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

void ModelRunner::run_pass(const float* input, float* output, Shape shape, StageTimer* timer) {
    const size_t pixels = size_t(shape.n) * shape.h * shape.w;
    const size_t stages = model_.stages.size();
    // On the host the first stage reads `input` and the last writes `output`;
    // only the activations between stages need buffers. A device backend
    // uploads into ping_ and downloads from wherever the last stage wrote.
    const bool host = backend_.is_host_memory();
    if (!host || stages > 1) reserve(pixels * model_.max_channels());

    const float* src = input;
    if (!host) {
        upload_timer_->start();
        backend_.upload(ping_.data(), input, shape.count());
        upload_timer_->stop();
        src = ping_.data();
    }
    int channels = model_.channels;
    for (size_t i = 0; i < stages; ++i) {
        const Stage& s = model_.stages[i];
        const StageWeights& w = weights_[i];
        // Alternate ping/pong, never writing the buffer being read.
        float* dst = (host && i + 1 == stages) ? output : (src == ping_.data() ? pong_.data() : ping_.data());
        stage_timers_[i]->start();
        if (auto* rb = std::get_if<ResidualBlockStage>(&s)) {
            ResidualBlockArgs a;
            a.shape = {shape.n, channels, shape.h, shape.w};
            a.hidden = rb->hidden;
            a.input = src, a.output = dst;
            a.conv_in_weight = w.a.data(), a.conv_in_bias = w.b.data();
            a.conv_out_weight = w.c.data(), a.conv_out_bias = w.d.data();
            backend_.residual_block(a);
        } else {
            const auto& conv = std::get<Conv2dStage>(s);
            Conv2dArgs a;
            a.in = {shape.n, channels, shape.h, shape.w};
            a.out_channels = conv.out_channels;
            a.kernel = conv.kernel;
            a.pad_before = conv.pad_before(), a.pad_after = conv.pad_after();
            a.pad_mode = conv.padding;
            a.input = src, a.output = dst;
            a.weight = w.a.data(), a.bias = w.b.data();
            backend_.conv2d(a);
        }
        stage_timers_[i]->stop();
        channels = stage_out_channels(s);
        src = dst;
    }
    if (!host) {
        download_timer_->start();
        backend_.download(output, src, shape.count());
        download_timer_->stop();
    }
    backend_.synchronize();
    if (timer) {
        if (!host) timer->add("upload", upload_timer_->elapsed_ms());
        for (size_t i = 0; i < stages; ++i) timer->add(stage_labels_[i], stage_timers_[i]->elapsed_ms());
        if (!host) timer->add("download", download_timer_->elapsed_ms());
    }
}

}  // namespace imr
