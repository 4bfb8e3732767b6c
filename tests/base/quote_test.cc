// Untrusted text inside messages: quoted with its control characters escaped, or put on one line.
#include "base/quote.h"

#include <gtest/gtest.h>

namespace vri {
namespace {

TEST(QuoteTest, QuotedTextShowsItsControlCharactersAndIsCut) {
  EXPECT_EQ(quoteForMessage("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(quoteForMessage("a\nb\x01"), "\"a\\nb\\x01\"");
  EXPECT_EQ(quoteForMessage(std::string(70, 'x')), "\"" + std::string(64, 'x') + "...\"");
}

TEST(QuoteTest, OneLineJoinsLinesWithOneSpaceAndTrimsTheEnds) {
  EXPECT_EQ(asOneLine("Input is not proper UTF-8, indicate encoding !\nBytes: 0x99 0x99\n"),
            "Input is not proper UTF-8, indicate encoding ! Bytes: 0x99 0x99");
  EXPECT_EQ(asOneLine("\t a \r\n\x01 b  "), "a b");
  EXPECT_EQ(asOneLine(""), "");
  EXPECT_EQ(asOneLine("\n\n"), "");
  EXPECT_EQ(asOneLine("caf\xc3\xa9"), "caf\xc3\xa9");  // bytes past ASCII are text, not control
}

}  // namespace
}  // namespace vri
