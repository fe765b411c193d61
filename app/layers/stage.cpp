#include "stage.h"

namespace imr {

namespace {

template <size_t I = 0>
Stage load_kind(const std::string& op, LayerReader& reader, const std::vector<int>& channels) {
    if constexpr (I == std::variant_size_v<Stage>) {
        throw Error(reader.where() + ": unknown op '" + op + "' (this build knows " + known_ops() +
                    "; a newer imrestore may)");
    } else {
        using Kind = std::variant_alternative_t<I, Stage>;
        if (op == Kind::kOp) {
            const int n = int(channels.size());
            if (n < Kind::kMinInputs || n > Kind::kMaxInputs)
                throw Error(reader.where() + ": reads " + std::to_string(n) + " input" + (n == 1 ? "" : "s") +
                            " (attribute 'inputs'); " + op + " takes " + std::to_string(Kind::kMinInputs) +
                            (Kind::kMaxInputs > Kind::kMinInputs ? ".." + std::to_string(Kind::kMaxInputs) : ""));
            return Kind::load(reader, channels);
        }
        return load_kind<I + 1>(op, reader, channels);
    }
}

template <size_t... I>
std::string op_list(std::index_sequence<I...>) {
    std::string s;
    ((s += (I ? ", " : "") + std::string(std::variant_alternative_t<I, Stage>::kOp)), ...);
    return s;
}

}  // namespace

Stage load_stage(const std::string& op, LayerReader& reader, const std::vector<int>& channels) {
    return load_kind(op, reader, channels);
}

std::string known_ops() {
    return op_list(std::make_index_sequence<std::variant_size_v<Stage>>{});
}

}  // namespace imr
