// Shape's helpers (op_args.h).
#include "op_args.h"

#include <sstream>

namespace imr {

std::string Shape::str() const {
    std::ostringstream s;
    s << '[' << n << ',' << c << ',' << h << ',' << w << ']';
    return s.str();
}

bool positive(const Shape& s) {
    return s.n > 0 && s.c > 0 && s.h > 0 && s.w > 0;
}

}  // namespace imr
