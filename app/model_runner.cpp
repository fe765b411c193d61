#include "model_runner.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "finite_check.h"
#include "model_fusion.h"

namespace imr {

namespace {

// Fraction of the backend's free memory a pass may take: the rest stays for
// the driver, other processes and fragmentation.
constexpr double kMemoryShare = 0.7;
// On the CPU a pass takes at most this much (unless --max-memory says
// otherwise): tiles of a megapixel or more run as fast as the whole image
// (2 cores, 12 MP: denoise-fast 9.97 s in 512 MiB tiles, 10.07 s whole;
// denoise 17.9 s in 256 or 512 MiB tiles), and a whole 12 MP pass of
// denoise-fast took 1.6 GB of activations (issue 19: a fixed amount of at
// most 1 GB besides the images). A GPU keeps whole passes: there they fill
// the device. A model of a wide receptive field gets more (efficient_pass_bytes).
constexpr size_t kHostPassBytes = size_t(256) << 20;
// A budget never forces a tile narrower than this many radii of the model
// (a tile of side t does (t + 2r)^2 / t^2 of the work: 13% more at 32
// radii; denoise-fast's 12 MP tiles under kHostPassBytes were that wide and
// cost no measurable time, while the four-level U-Net's 276-pixel field
// would get 256-pixel tiles there: 4.5x the work).
constexpr int kMinTileRadii = 32;
// ... but never to more than this: issue 19 bounds a run at a fixed 1 GB
// besides its images, and a U-Net's 32 radii are a whole 12 MP photo (the
// CPU's default denoise-unet-s on 2 cores: 28.5 s and 3.0 GB whole, 34.5 s
// and 1.05 GB in 512 MiB passes; the GPU default denoise-unet's 572-pixel
// field: 59 s and 10.3 GB whole, 677 s in these passes, which compute 11.6
// times the photo's pixels: the bound is kept, --max-memory lifts it, and
// the CLI's note says so where it costs this much).
constexpr size_t kWidePassBytes = size_t(512) << 20;
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
    : file_model_(std::make_shared<const ModelFile>(std::move(model))),
      model_(std::make_shared<const ModelFile>(fuse_stages(*file_model_))),
      graph_(resolve_graph(*model_, model_->path)),
      backend_(backend),
      options_(std::move(options)),
      precision_(resolve_precision(options_.precision, *model_, backend)) {
    for (const std::string& name : model_->extra_inputs) {
        const auto it = std::find_if(options_.extra_inputs.begin(), options_.extra_inputs.end(),
                                     [&](const auto& e) { return e.first == name; });
        if (it == options_.extra_inputs.end())
            throw Error("model '" + model_->name + "' takes the input '" + name + "', which was not given" +
                        (name == "noise_level"    ? " (--noise-level)"
                         : name == "jpeg_quality" ? " (--jpeg-quality)"
                                                  : ""));
        extra_values_.push_back(it->second);
    }
    for (const auto& [op, variant] : options_.forced_variants) backend.force_variant(op, variant);
    const bool wired = file_model_->uses_wiring();
    prepared_ = std::make_shared<Stages>();
    for (size_t i = 0; i < model_->stages.size(); ++i) {
        const Stage& s = model_->stages[i];
        prepared_->push_back(std::visit([&](const auto& st) { return st.prepare(backend, precision_); }, s));
        stage_timers_.push_back(backend.make_timer());
        // By index in a chain (as the file numbers them), by name in a graph.
        stage_labels_.push_back("stage " + (wired ? model_->stage_name(i) : std::to_string(i)) + " " +
                                stage_op_name(s));
    }
    plan_ = plan_for(*prepared_);
    // A half precision no stage computes in (a model of residual blocks
    // only, or a convolution whose neighbours take f32 on both sides) runs
    // in fp32 and is reported so, never as fp32 under another name.
    const TensorType f32{};
    if ((precision_ == Precision::Fp16 || precision_ == Precision::Bf16) &&
        std::all_of(plan_.values.begin(), plan_.values.end(), [&](const PlanValue& v) { return v.type == f32; }))
        precision_ = Precision::Fp32;
    // Likewise tf32 for a model without conv2d stages, the only ones with TF32 kernels.
    if (precision_ == Precision::Tf32 && std::none_of(model_->stages.begin(), model_->stages.end(), [](const Stage& s) {
            return std::holds_alternative<Conv2dStage>(s);
        }))
        precision_ = Precision::Fp32;
    // Per image pixel, on a side of whole blocks of the size multiple so the
    // ratio is exact: the arena of this plan and of an all-f32 one (a rerun
    // in fp32 needs it, in the same reservation), and the largest tensor.
    const int side = 64 * model_->size_multiple();
    const Shape unit{1, model_->channels, side, side};
    const double pixels = double(side) * side;
    std::vector<StageTypeInfo> all_f32(model_->stages.size());
    for (size_t i = 0; i < all_f32.size(); ++i) all_f32[i].adds_model_input = stage_adds_model_input(model_->stages[i]);
    const RunnerPlan f32_plan = make_plan(graph_, all_f32);
    size_t most = 0;
    for (const RunnerPlan* p : {static_cast<const RunnerPlan*>(&plan_), &f32_plan}) {
        const ArenaLayout l = layout(*p, *prepared_, unit);
        most = std::max(most, l.total);
        for (size_t v = 0; v < p->values.size(); ++v)
            if (p->values[v].tensor >= 0)
                largest_elements_per_pixel_ = std::max(largest_elements_per_pixel_,
                                                       double(Tensor{nullptr, value_shape(graph_, p->values[v], unit),
                                                                     p->values[v].type.dtype, p->values[v].type.layout}
                                                                  .stored_count()) /
                                                           pixels);
    }
    arena_bytes_per_pixel_ = double(most) / pixels;
    make_pass_timers();
    backend.synchronize();
}

ModelRunner::ModelRunner(const ModelRunner& same_device, Backend& sibling)
    : file_model_(same_device.file_model_),
      model_(same_device.model_),
      graph_(same_device.graph_),
      backend_(sibling),
      options_(same_device.options_),
      precision_(same_device.precision_),
      extra_values_(same_device.extra_values_),
      prepared_(same_device.prepared_),
      plan_(same_device.plan_),
      arena_bytes_per_pixel_(same_device.arena_bytes_per_pixel_),
      largest_elements_per_pixel_(same_device.largest_elements_per_pixel_),
      stage_labels_(same_device.stage_labels_) {
    for (const auto& [op, variant] : options_.forced_variants) sibling.force_variant(op, variant);
    for (size_t i = 0; i < model_->stages.size(); ++i) stage_timers_.push_back(sibling.make_timer());
    make_pass_timers();
}

void ModelRunner::make_pass_timers() {
    upload_timer_ = backend_.make_timer();
    download_timer_ = backend_.make_timer();
    to_planes_timer_ = backend_.make_timer();
    to_samples_timer_ = backend_.make_timer();
}

RunnerPlan ModelRunner::plan_for(const Stages& stages) const {
    std::vector<StageTypeInfo> info;
    for (size_t i = 0; i < stages.size(); ++i)
        info.push_back({stages[i]->type(), stages[i]->reads_f32(), stages[i]->writes_f32(),
                        stage_adds_model_input(model_->stages[i])});
    return make_plan(graph_, info);
}

ArenaLayout ModelRunner::layout(const RunnerPlan& plan, const Stages& stages, Shape shape) const {
    return layout_arena(plan, graph_, shape, [&](int stage, const Shape& in, TensorType type) {
        return stages[size_t(stage)]->scratch_bytes(in, type);
    });
}

size_t ModelRunner::arena_bytes(Shape shape) const {
    return layout(plan_, *prepared_, shape).total;
}

// The arena and, on a device, the copy of the input and the extra inputs'
// planes. (Ops keep only small scratch of their own beyond what a stage
// asks for: the CPU conv2d pads bands of a few rows, not whole tensors.)
size_t ModelRunner::bytes_per_pixel() const {
    const double input = backend_.is_host_memory() ? 0.0 : double(model_->channels);
    return size_t(arena_bytes_per_pixel_ + sizeof(float) * (input + double(model_->extra_inputs.size()))) + 1;
}

void ModelRunner::reserve(size_t arena_bytes, size_t input_bytes, size_t extra_bytes, size_t samples_bytes) {
    if (samples_.bytes() < samples_bytes) {
        samples_.reset();
        samples_ = DeviceBuffer(backend_, samples_bytes);
    }
    if (arena_.bytes() < arena_bytes) {
        arena_.reset();  // free before allocating the larger one
        arena_ = DeviceBuffer(backend_, arena_bytes);
    }
    if (input_.bytes() < input_bytes) {
        input_.reset();
        input_ = DeviceBuffer(backend_, input_bytes);
    }
    if (extra_.bytes() < extra_bytes) {
        extra_.reset();
        extra_ = DeviceBuffer(backend_, extra_bytes);
    }
}

void ModelRunner::release_buffers() {
    arena_.reset(), input_.reset(), extra_.reset(), samples_.reset();
}

void ModelRunner::set_extra_values(std::vector<float> values) {
    if (values.size() != extra_values_.size())
        throw Error("model '" + model_->name + "': wrong number of extra inputs");
    extra_values_ = std::move(values);
}

void ModelRunner::run(const Tensor& input_tensor, const Tensor& output_tensor, StageTimer* timer) {
    const Shape shape = input_tensor.shape;
    if (shape.c != model_->channels)
        throw Error("model '" + model_->name + "' takes " + std::to_string(model_->channels) + " channels, given " +
                    shape.str());
    for (const Tensor* t : {&input_tensor, &output_tensor})
        if (!*t || t->dtype != DType::F32 || t->layout != Layout::NCHW)
            throw Error("model '" + model_->name + "': the runner takes f32 NCHW host tensors, given " + t->str());
    if (output_tensor.shape != shape)
        throw Error("model '" + model_->name + "': output " + output_tensor.shape.str() + " for input " + shape.str());
    const float* input = input_tensor.as<const float>();
    float* output = output_tensor.as<float>();
    const int m = model_->size_multiple();
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

bool ModelRunner::run_samples(const ImageSamples& samples, void* out, float strength, StageTimer* timer) {
    const int C = model_->channels, items = image_planes_items(C, samples.color_channels());
    if (items == 0 || samples.n < 1 || samples.h < 1 || samples.w < 1)
        throw Error("model '" + model_->name + "' (" + std::to_string(C) + " channels) cannot take " + samples.str());
    const int m = model_->size_multiple();
    const Shape padded{samples.n * items, C, (samples.h + m - 1) / m * m, (samples.w + m - 1) / m * m};
    ImageSamples in_place = samples;
    in_place.data = out;
    ImagePlanesArgs to_planes, to_samples;
    to_planes.direction = PlanesDirection::FromSamples;
    to_samples.direction = PlanesDirection::ToSamples;
    to_samples.strength = strength;
    if (backend_.is_host_memory()) {
        // The planes in host memory, and the whole run() machinery (tiles
        // where the batch does not fit) between the two conversions.
        std::vector<float> planes(padded.count()), result(padded.count());
        to_planes.samples = samples, to_planes.planes = f32_nchw(planes.data(), padded);
        {
            ScopedStage t(timer, "to-NCHW on the compute lane");
            backend_.image_planes(to_planes);
        }
        run(f32_nchw(planes.data(), padded), f32_nchw(result.data(), padded), timer);  // aligned: no padding
        ScopedStage t(timer, "from-NCHW on the compute lane");
        if (out != samples.data) std::memcpy(out, samples.data, samples.bytes());  // alpha
        to_samples.samples = in_place, to_samples.planes = f32_nchw(result.data(), padded);
        if (strength != 1) to_samples.input = to_planes.planes;
        backend_.image_planes(to_samples);
        return true;
    }
    // A device: one pass, or none (the caller's planes then go through run(),
    // tiled). Nothing reaches `out` before the download, the last step.
    const size_t pixels = size_t(padded.n) * padded.h * padded.w;
    if (tiles_forced(padded) || options_.tta || pixels + samples.bytes() / bytes_per_pixel() + 1 > pass_pixels_fit())
        return false;
    try {
        begin_pass(padded, samples.bytes());
        upload_timer_->start();
        backend_.upload(samples_.data(), samples.data, samples.bytes());
        upload_timer_->stop();
        to_planes_timer_->start();
        to_planes.samples = samples, to_planes.samples.data = samples_.data();
        to_planes.planes = f32_nchw(input_.as<float>(), padded);
        backend_.image_planes(to_planes);
        to_planes_timer_->stop();
        const Tensor result = compute_pass(to_planes.planes, nullptr, {});
        to_samples_timer_->start();
        to_samples.samples = to_planes.samples;
        to_samples.planes = result;
        if (strength != 1) to_samples.input = to_planes.planes;
        backend_.image_planes(to_samples);
        to_samples_timer_->stop();
        download_timer_->start();
        backend_.download(out, samples_.data(), samples.bytes());
        download_timer_->stop();
        backend_.synchronize();
    } catch (const OutOfMemory&) {
        release_buffers();
        return false;
    }
    if (timer) {
        timer->add("upload", upload_timer_->elapsed_ms());
        timer->add("to-NCHW on device", to_planes_timer_->elapsed_ms());
        for (size_t i = 0; i < model_->stages.size(); ++i) timer->add(stage_labels_[i], stage_timers_[i]->elapsed_ms());
        timer->add("from-NCHW on device", to_samples_timer_->elapsed_ms());
        timer->add("download", download_timer_->elapsed_ms());
    }
    return true;
}

size_t ModelRunner::efficient_pass_bytes() const {
    const size_t side = size_t(kMinTileRadii + 2) * size_t(model_->radius());
    return std::min(side * side * bytes_per_pixel(), kWidePassBytes);
}

bool ModelRunner::tiles_forced(Shape shape) const {
    return options_.max_tile > 0 && (shape.h > options_.max_tile || shape.w > options_.max_tile);
}

size_t ModelRunner::memory_share_bytes() const {
    // samples_ is not counted: a pass of run() keeps it (reserve only grows),
    // so it is not memory such a pass could have.
    const size_t held = arena_.bytes() + input_.bytes() + extra_.bytes();
    return size_t(kMemoryShare * double(backend_.free_memory() + held));
}

size_t ModelRunner::pass_index_limit() const {
    // Kernels index tensors with 32-bit integers (the CUDA ones refuse 2^31
    // elements and more): a pass over more pixels than that allows is tiled.
    return size_t(double(INT_MAX - 1) / largest_elements_per_pixel_);
}

size_t ModelRunner::pass_pixels_fit(size_t max_bytes) const {
    size_t budget = memory_share_bytes();
    if (options_.max_memory)
        budget = std::min(budget, options_.max_memory);
    else if (backend_.is_host_memory())
        budget = std::min(budget, std::max(kHostPassBytes, efficient_pass_bytes()));
    if (max_bytes) budget = std::min(budget, max_bytes);
    return std::min(budget / bytes_per_pixel(), pass_index_limit());
}

int ModelRunner::tile_side(Shape shape, size_t pixels_fit) const {
    // Tiles and halos are multiples of the size multiple, so every tile sees
    // the same pixel blocks as the whole image. A tile's pass is the tile
    // and its halo, clipped to the image (a model whose halo exceeds the
    // image runs it whole, as one tile).
    const int r = model_->radius(), m = model_->size_multiple();
    const int smallest = std::max(kSmallestTile, m);
    int tile = std::max((options_.max_tile > 0 ? options_.max_tile : kLargestTile) / m * m, m);
    auto pass_pixels = [&](int t) {  // the halo before a tile may be up to 2m - 1 wider (run_tiled)
        const size_t side = size_t(t) + 2 * size_t(r) + 2 * size_t(m);
        return std::min(side, size_t(shape.h)) * std::min(side, size_t(shape.w));
    };
    int too_large = 0;  // the last side that did not fit
    while (tile > smallest && pass_pixels(tile) > pixels_fit) too_large = tile, tile = std::max(tile / 2 / m * m, m);
    // Halving lands up to 2x below what fits: grow back, a size multiple at
    // a time. Where the halo is wide it pays: denoise-unet-s's 188-pixel
    // field in 512 MiB passes got 1024-pixel tiles (1.41x the work of the
    // whole image) where 1400 fit (1.30x).
    while (too_large > 0 && tile + m < too_large && pass_pixels(tile + m) <= pixels_fit) tile += m;
    if (pass_pixels(tile) > pixels_fit)
        throw OutOfMemory(backend_.name() + ": not enough free memory for even a " + std::to_string(tile) +
                          "-pixel tile of model '" + model_->name + "'");
    return tile;
}

void ModelRunner::run_aligned(const float* input, float* output, Shape shape, StageTimer* timer) {
    size_t pixels_fit = pass_pixels_fit();
    const size_t image_pixels = size_t(shape.h) * shape.w;
    if (!tiles_forced(shape) && image_pixels * shape.n <= pixels_fit) {
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
    const size_t plane = size_t(shape.c) * image_pixels;
    const Shape one{1, shape.c, shape.h, shape.w};
    for (;;) {
        const int tile = tile_side(one, pixels_fit);
        try {
            for (int n = 0; n < shape.n; ++n) {
                const float* in = input + n * plane;
                float* out = output + n * plane;
                // Rectangles of the image's own planes (aligned: no padding to read).
                auto read = [&](PlaneRect rc, float* planes) {
                    for (int c = 0; c < shape.c; ++c)
                        for (int y = 0; y < rc.h; ++y)
                            std::memcpy(planes + (size_t(c) * rc.h + y) * rc.w,
                                        in + (size_t(c) * shape.h + rc.y + y) * shape.w + rc.x,
                                        sizeof(float) * size_t(rc.w));
                };
                auto write = [&](PlaneRect rc, const float* planes) {
                    for (int c = 0; c < shape.c; ++c)
                        for (int y = 0; y < rc.h; ++y)
                            std::memcpy(out + (size_t(c) * shape.h + rc.y + y) * shape.w + rc.x,
                                        planes + (size_t(c) * rc.h + y) * rc.w, sizeof(float) * size_t(rc.w));
                };
                if (tile >= shape.h && tile >= shape.w)
                    run_pass(in, out, one, timer);  // the image fits: in place, no tile copies
                else
                    run_tiled(one, one, tile, read, write, timer);
            }
            return;
        } catch (const OutOfMemory&) {
            release_buffers();
            pixels_fit = size_t(tile) * tile / 4;  // retry with half the tile side
        }
    }
}

void ModelRunner::run_tiles(Shape shape, const TileReader& read, const TileWriter& write, StageTimer* timer,
                            size_t max_bytes) {
    if (shape.n != 1 || shape.c != model_->channels || shape.h < 1 || shape.w < 1)
        throw Error("model '" + model_->name + "': run_tiles takes one image of " + std::to_string(model_->channels) +
                    " channels, given " + shape.str());
    const int m = model_->size_multiple();
    const Shape padded{1, shape.c, (shape.h + m - 1) / m * m, (shape.w + m - 1) / m * m};
    size_t pixels_fit = pass_pixels_fit(max_bytes);
    for (;;) {
        const int tile = tile_side(padded, pixels_fit);
        try {
            run_tiled(padded, shape, tile, read, write, timer);
            return;
        } catch (const OutOfMemory&) {
            release_buffers();
            pixels_fit = size_t(tile) * tile / 4;
        }
    }
}

int ModelRunner::effective_tile(Shape padded, int tile) const {
    // Where the first tile's halo already reaches over the whole image, the
    // image is one tile (each tile would otherwise run the whole image).
    const int r = model_->radius();
    return tile + r >= padded.h && tile + r >= padded.w ? std::max(padded.h, padded.w) : tile;
}

ModelRunner::PlaneRect ModelRunner::tile_pass(Shape padded, int tile, int y0, int x0) const {
    // Core [y0,y1)x[x0,x1) plus a halo of r pixels (before it, up to the
    // multiple of `align` at or below), clipped to the padded image: at its
    // edges the model pads exactly as it would untiled.
    // A pass starts on a multiple of 2m: at every scale s of the model (s
    // divides m) its first pixel is then an even one, as the whole image's
    // is. Winograd F(2x2, 3x3) counts its 2x2 output patches from the pass's
    // first pixel, and an output computed in another patch position rounds
    // differently: a pass starting on an odd pixel differed from the whole
    // image in the last bits (ModelRunner.TilesAndBatchesAreBitIdenticalToTheImageAlone).
    const int r = model_->radius(), align = 2 * model_->size_multiple();
    const int y1 = std::min(padded.h, y0 + tile), x1 = std::min(padded.w, x0 + tile);
    const int hy0 = std::max(0, y0 - r) / align * align, hy1 = std::min(padded.h, y1 + r);
    const int hx0 = std::max(0, x0 - r) / align * align, hx1 = std::min(padded.w, x1 + r);
    return {hy0, hx0, hy1 - hy0, hx1 - hx0};
}

ModelRunner::PassPlan ModelRunner::pass_plan(int h, int w) const {
    const int m = model_->size_multiple();
    const Shape padded{1, model_->channels, (h + m - 1) / m * m, (w + m - 1) / m * m};
    const size_t pixels = size_t(padded.h) * padded.w;
    PassPlan plan;
    plan.whole_bytes = pixels * bytes_per_pixel();
    const size_t fit = pass_pixels_fit();
    plan.one_pass_possible = pixels <= pass_index_limit() && plan.whole_bytes <= memory_share_bytes();
    plan.tile = std::max(padded.h, padded.w);
    if (!tiles_forced(padded) && pixels <= fit) return plan;
    plan.tile = effective_tile(padded, tile_side(padded, fit));
    size_t computed = 0;  // run_tiled()'s passes over the padded image, as run() makes them
    for (int y0 = 0; y0 < padded.h; y0 += plan.tile)
        for (int x0 = 0; x0 < padded.w; x0 += plan.tile) {
            const PlaneRect pass = tile_pass(padded, plan.tile, y0, x0);
            computed += size_t(pass.h) * pass.w;
        }
    plan.work = double(computed) / double(pixels);
    return plan;
}

void ModelRunner::run_tiled(Shape padded, Shape image, int tile, const TileReader& read, const TileWriter& write,
                            StageTimer* timer) {
    const int C = padded.c;
    tile = effective_tile(padded, tile);
    std::vector<float> tile_in, tile_out, core;
    for (int y0 = 0; y0 < image.h; y0 += tile) {
        for (int x0 = 0; x0 < image.w; x0 += tile) {
            // The tile's pass; only the core's pixels within the image are written.
            const int y1 = std::min(padded.h, y0 + tile), x1 = std::min(padded.w, x0 + tile);
            const PlaneRect pass = tile_pass(padded, tile, y0, x0);
            const int hy0 = pass.y, hx0 = pass.x;
            const Shape ts{1, C, pass.h, pass.w};
            ScopedStage copy_in(timer, "tile copies");
            tile_in.resize(ts.count());
            tile_out.resize(ts.count());
            read(pass, tile_in.data());
            copy_in.stop();
            run_pass(tile_in.data(), tile_out.data(), ts, timer, {double(padded.h) / ts.h, double(padded.w) / ts.w});
            ScopedStage copy_out(timer, "tile copies");
            const PlaneRect out{y0, x0, std::min(y1, image.h) - y0, std::min(x1, image.w) - x0};
            const bool whole = out.h == ts.h && out.w == ts.w;  // the tile is all core (one tile, no padding)
            if (!whole) {
                core.resize(size_t(C) * out.h * out.w);
                for (int c = 0; c < C; ++c)
                    for (int y = 0; y < out.h; ++y)
                        std::memcpy(&core[(size_t(c) * out.h + y) * out.w],
                                    &tile_out[(size_t(c) * ts.h + (y0 - hy0 + y)) * ts.w + (x0 - hx0)],
                                    sizeof(float) * size_t(out.w));
            }
            write(out, whole ? tile_out.data() : core.data());
        }
    }
}

void ModelRunner::begin_pass(Shape shape, size_t samples_bytes) {
    // The layout is O(values^2) to place: made once per pass shape (the
    // tiles of an image share theirs but at its edges).
    if (!(shape == arena_shape_)) arena_layout_ = layout(plan_, *prepared_, shape), arena_shape_ = shape;
    const size_t plane = size_t(shape.n) * shape.h * shape.w;
    reserve(arena_layout_.total, backend_.is_host_memory() ? 0 : shape.count() * sizeof(float),
            extra_values_.size() * plane * sizeof(float), samples_bytes);
    for (size_t e = 0; e < extra_values_.size(); ++e) {
        const std::vector<float> values(plane, extra_values_[e]);
        backend_.upload(extra_.as<float>() + e * plane, values.data(), plane * sizeof(float));
    }
}

void ModelRunner::run_pass(const float* input, float* output, Shape shape, StageTimer* timer, PlanScale plan) {
    if (!options_.tta) return run_pass_once(input, output, shape, timer, plan);
    // --tta: the model on each of the 8 dihedral images of the pass (t's
    // bits: flip x, flip y, transpose), each output turned back and summed
    // in this order, then scaled: the same sum for every pixel whatever
    // the tiling. Transposed passes come last, so the arena's layout is made
    // twice, not eight times.
    const size_t n = shape.count();
    std::vector<float> turned(n), result(n), sum(n, 0.0f);
    for (int t = 0; t < 8; ++t) {
        const bool transpose = t & 4;
        Shape ts = shape;
        PlanScale ps = plan;
        if (transpose) std::swap(ts.h, ts.w), std::swap(ps.h, ps.w);
        // Pixel (y', x') of the turned image is pixel source(y', x') of the pass's.
        auto each = [&](auto&& f) {
            for (int p = 0; p < shape.n * shape.c; ++p) {
                const size_t base = size_t(p) * shape.h * shape.w;
                for (int y = 0; y < ts.h; ++y)
                    for (int x = 0; x < ts.w; ++x) {
                        const int a = t & 2 ? ts.h - 1 - y : y, b = t & 1 ? ts.w - 1 - x : x;
                        const size_t src = base + (transpose ? size_t(b) * shape.w + a : size_t(a) * shape.w + b);
                        f(base + size_t(y) * ts.w + x, src);
                    }
            }
        };
        {
            ScopedStage copies(timer, "tta copies");
            each([&](size_t dst, size_t src) { turned[dst] = input[src]; });
        }
        run_pass_once(turned.data(), result.data(), ts, timer, ps);
        ScopedStage copies(timer, "tta copies");
        each([&](size_t dst, size_t src) { sum[src] += result[dst]; });
    }
    for (size_t i = 0; i < n; ++i) output[i] = sum[i] * 0.125f;
}

void ModelRunner::run_pass_once(const float* input, float* output, Shape shape, StageTimer* timer, PlanScale plan) {
    // On the host the stages read `input` and the last writes `output` (or
    // its convert does); everything between lives in the arena. A device
    // backend uploads into input_ and downloads the result from the arena.
    const bool host = backend_.is_host_memory();
    begin_pass(shape, 0);
    Tensor src = f32_nchw(input, shape);
    if (!host) {
        upload_timer_->start();
        src.data = input_.data();
        backend_.upload(src.data, input, src.bytes());
        upload_timer_->stop();
    }
    const Tensor result = compute_pass(src, output, plan);
    if (!host) {
        download_timer_->start();
        backend_.download(output, result.data, result.bytes());
        download_timer_->stop();
    }
    backend_.synchronize();
    if (timer) {
        if (!host) timer->add("upload", upload_timer_->elapsed_ms());
        for (size_t i = 0; i < model_->stages.size(); ++i) timer->add(stage_labels_[i], stage_timers_[i]->elapsed_ms());
        if (!host) timer->add("download", download_timer_->elapsed_ms());
    }
}

Tensor ModelRunner::compute_pass(const Tensor& src, float* output, PlanScale plan) {
    const Shape shape = src.shape;
    computed_pixels_ += size_t(shape.n) * shape.h * shape.w;
    const bool half = precision_ == Precision::Fp16 || precision_ == Precision::Bf16;
    // In fp32 where the pipeline asks (a 16-bit image under --precision
    // auto), or again in fp32 where a half-precision pass's output is not
    // finite (an fp16 activation overflowed). The fp32 arena fits the
    // reservation (bytes_per_pixel counts an all-f32 plan).
    auto run_fp32 = [&] {
        prepare_fp32_stages();
        const ArenaLayout arena32 = layout(plan_fp32_, prepared_fp32_, shape);
        reserve(arena32.total, 0, 0);
        return execute(plan_fp32_, prepared_fp32_, arena32, src, output, plan);
    };
    Tensor result;
    if (half && compute_in_fp32_) {
        result = run_fp32();
    } else {
        result = execute(plan_, *prepared_, arena_layout_, src, output, plan);
        if (half && !all_finite(backend_, result)) {
            result = run_fp32();
            ++fp32_reruns_;
        }
    }
    return result;
}

void ModelRunner::prepare_fp32_stages() {
    if (!prepared_fp32_.empty()) return;
    // Built aside and kept only whole: a prepare that throws (out of memory)
    // must not leave a partial set for the next batch.
    Stages fp32;
    for (const Stage& s : model_->stages)
        fp32.push_back(std::visit([&](const auto& st) { return st.prepare(backend_, Precision::Fp32); }, s));
    plan_fp32_ = plan_for(fp32);
    prepared_fp32_ = std::move(fp32);
}

Tensor ModelRunner::execute(const RunnerPlan& plan, const Stages& stages, const ArenaLayout& arena, const Tensor& input,
                            float* output, PlanScale image) {
    const bool host = backend_.is_host_memory();
    const Shape shape = input.shape;
    const size_t plane = size_t(shape.n) * shape.h * shape.w;
    std::vector<Tensor> t(plan.values.size());
    for (size_t v = 0; v < plan.values.size(); ++v) {
        const PlanValue& pv = plan.values[v];
        if (pv.tensor < 0) {  // scratch
            t[v].data = arena.bytes[v] ? arena_.as<char>() + arena.offset[v] : nullptr;
            continue;
        }
        t[v] = {nullptr, value_shape(graph_, pv, shape), pv.type.dtype, pv.type.layout};
        if (pv.external)  // the image, or an extra input's plane
            t[v].data = pv.tensor == 0 ? input.data : extra_.as<float>() + size_t(pv.tensor - 1) * plane;
        else
            t[v].data = arena_.as<char>() + arena.offset[v];
    }
    if (host) t[size_t(plan.result)].data = output;
    int timing = -1;  // the stage whose timer runs
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        const PlanStep& step = plan.steps[i];
        if (step.timed_as != timing) {
            if (timing >= 0) stage_timers_[size_t(timing)]->stop();
            timing = step.timed_as;
            stage_timers_[size_t(timing)]->start();
        }
        if (step.stage < 0) {
            ConvertArgs c;
            c.input = t[size_t(step.inputs[0])], c.output = t[size_t(step.output)];
            backend_.convert(c);
            continue;
        }
        StageIO io;
        for (int v : step.inputs) io.inputs.push_back(t[size_t(v)]);
        io.output = t[size_t(step.output)];
        if (step.model_input >= 0) io.model_input = t[size_t(step.model_input)];
        io.scratch = t[size_t(step.scratch)].data;
        io.plan = image;
        try {
            stages[size_t(step.stage)]->run(backend_, io);
        } catch (const OutOfMemory&) {
            throw;  // the tiling's business
        } catch (const Error& e) {
            throw Error("model '" + model_->name + "', " + stage_labels_[size_t(step.stage)] + ": " + e.what());
        }
    }
    if (timing >= 0) stage_timers_[size_t(timing)]->stop();
    return t[size_t(plan.result)];
}

}  // namespace imr
