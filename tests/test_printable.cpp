// printable(): control characters from file names and model texts never
// reach the terminal raw.
#include <gtest/gtest.h>

#include "util/printable.h"

namespace imr {
namespace {

TEST(Printable, EscapesControlCharactersAndKeepsUtf8) {
    EXPECT_EQ(printable("photo.png"), "photo.png");
    EXPECT_EQ(printable("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x93\xB7.jpg"),
              "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x93\xB7.jpg");
    EXPECT_EQ(printable("a\nb\tc\rd\\e"), "a\\nb\\tc\\rd\\\\e");
    EXPECT_EQ(printable("\x1B[2Jx"), "\\x1B[2Jx");  // clear screen
    EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\x00b");
    EXPECT_EQ(printable("\x7F"), "\\x7F");
    EXPECT_EQ(printable("\xC2\x9B"
                        "31m"),
              "\\xC2\\x9B31m");                      // C1 CSI, UTF-8 encoded
    EXPECT_EQ(printable("\xC2\xA0"), "\xC2\xA0");    // no-break space is printable
    EXPECT_EQ(printable("\xFF\xC3"), "\\xFF\\xC3");  // not UTF-8: the bytes
    EXPECT_EQ(printable("\xC0\x8A"), "\\xC0\\x8A");  // overlong newline
}

}  // namespace
}  // namespace imr
