// base/json.h: the one JSON string escaper, against hostile text. Every output must be a
// valid JSON string literal (checked here by a small strict parser of our own, so the test
// does not trust the escaper to judge itself) and valid UTF-8.
#include "base/json.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hg::base::json {
namespace {

using namespace std::string_literals;

/// Decodes a JSON string literal strictly (RFC 8259 §7): nullopt on anything the RFC
/// refuses (a raw control byte, a bad escape, a lone surrogate escape, invalid UTF-8, text
/// after the closing quote). Returns the decoded text as UTF-8.
std::optional<std::string> decode(std::string_view lit) {
  if (lit.size() < 2 || lit.front() != '"' || lit.back() != '"') return std::nullopt;
  std::string out;
  auto put = [&out](uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  };
  for (std::size_t i = 1; i + 1 < lit.size();) {
    const auto b = static_cast<unsigned char>(lit[i]);
    if (b == '"' || b < 0x20) return std::nullopt;
    if (b != '\\') {
      if (b >= 0x80) {
        // Valid UTF-8 only: a lead byte, then its continuation bytes, no overlong forms.
        const std::size_t len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 0;
        if (len == 0 || b > 0xF4 || i + len > lit.size() - 1) return std::nullopt;
        uint32_t cp = b & (0x7Fu >> len);
        for (std::size_t k = 1; k < len; ++k) {
          const auto c = static_cast<unsigned char>(lit[i + k]);
          if ((c & 0xC0) != 0x80) return std::nullopt;
          cp = (cp << 6) | (c & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
          return std::nullopt;
        out.append(lit.substr(i, len));
        i += len;
      } else {
        out += static_cast<char>(b);
        ++i;
      }
      continue;
    }
    if (i + 2 >= lit.size()) return std::nullopt;
    const char e = lit[i + 1];
    i += 2;
    switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        if (i + 4 > lit.size() - 1) return std::nullopt;
        uint32_t cp = 0;
        for (int k = 0; k < 4; ++k) {
          const char h = lit[i + k];
          cp <<= 4;
          if (h >= '0' && h <= '9')
            cp |= h - '0';
          else if (h >= 'a' && h <= 'f')
            cp |= h - 'a' + 10;
          else if (h >= 'A' && h <= 'F')
            cp |= h - 'A' + 10;
          else
            return std::nullopt;
        }
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDFFF) return std::nullopt;  // we never write surrogates
        put(cp);
        break;
      }
      default:
        return std::nullopt;
    }
  }
  return out;
}

TEST(JsonQuote, PlainTextIsQuotedAsItIs) {
  EXPECT_EQ(quote(""), "\"\"");
  EXPECT_EQ(quote("www.example.com."), "\"www.example.com.\"");
  EXPECT_EQ(quote("a/b <c> 'd'"), "\"a/b <c> 'd'\"");
}

TEST(JsonQuote, QuoteAndBackslashAreEscaped) {
  EXPECT_EQ(quote(R"(say "hi" \ bye)"), R"("say \"hi\" \\ bye")");
  EXPECT_EQ(decode(quote(R"(\"\\")")), R"(\"\\")");
}

TEST(JsonQuote, ControlBytesNulAndDelAreEscaped) {
  EXPECT_EQ(quote("a\nb\tc\rd\be\ff"), R"("a\nb\tc\rd\be\ff")");
  EXPECT_EQ(quote("x\0y"s), R"("x\u0000y")");
  EXPECT_EQ(quote("\x01\x1f\x7f"), R"("\u0001\u001f\u007f")");
  std::string all;
  for (int c = 0; c < 0x80; ++c)
    all += static_cast<char>(c);
  const std::string q = quote(all);
  for (std::size_t i = 1; i + 1 < q.size(); ++i)
    EXPECT_TRUE(q[i] >= 0x20 && q[i] < 0x7f) << "raw byte " << int(q[i]) << " at " << i;
  EXPECT_EQ(decode(q), all);
}

TEST(JsonQuote, ValidUtf8IsCopiedButLineAndParagraphSeparatorsAreEscaped) {
  EXPECT_EQ(quote("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  EXPECT_EQ(quote("a\xe2\x80\xa8"
                  "b\xe2\x80\xa9"),
            R"("a\u2028b\u2029")");
  EXPECT_EQ(decode(quote("a\xe2\x80\xa8")), "a\xe2\x80\xa8");
}

TEST(JsonQuote, InvalidUtf8BecomesOneReplacementPerByte) {
  EXPECT_EQ(quote("\xff"), R"("\ufffd")");
  EXPECT_EQ(quote("a\x80z"), R"("a\ufffdz")");                            // stray continuation
  EXPECT_EQ(quote("\xc3"), R"("\ufffd")");                                // truncated at the end
  EXPECT_EQ(quote("\xe2\x82z"), R"("\ufffd\ufffdz")");                    // truncated in the middle
  EXPECT_EQ(quote("\xc0\xaf"), R"("\ufffd\ufffd")");                      // overlong '/'
  EXPECT_EQ(quote("\xe0\x80\xaf"), R"("\ufffd\ufffd\ufffd")");            // overlong, 3 bytes
  EXPECT_EQ(quote("\xed\xa0\x80"), R"("\ufffd\ufffd\ufffd")");            // a UTF-16 surrogate
  EXPECT_EQ(quote("\xf4\x90\x80\x80"), R"("\ufffd\ufffd\ufffd\ufffd")");  // > U+10FFFF
  EXPECT_EQ(quote("\xf5\x80"), R"("\ufffd\ufffd")");
}

TEST(JsonQuote, EveryByteStringDecodesStrictly) {
  // Every string of up to two bytes, and a sample of longer ones: the output is always a
  // literal a strict parser accepts, and ASCII or valid UTF-8 input comes back unchanged.
  for (int a = 0; a < 256; ++a) {
    for (int b = -1; b < 256; ++b) {
      std::string s(1, static_cast<char>(a));
      if (b >= 0) s += static_cast<char>(b);
      const auto back = decode(quote(s));
      ASSERT_TRUE(back.has_value()) << a << ' ' << b << ": " << quote(s);
      if (a < 0x80 && b < 0x80) {
        EXPECT_EQ(*back, s);
      }
    }
  }
  uint32_t x = 12345;
  for (int n = 0; n < 2000; ++n) {
    std::string s;
    for (int k = 0; k < 12; ++k) {
      x = x * 1103515245u + 12345u;
      s += static_cast<char>(x >> 16);
    }
    ASSERT_TRUE(decode(quote(s)).has_value()) << quote(s);
  }
}

TEST(JsonQuote, AppendAddsToWhatIsThere) {
  std::string out = "{\"k\": ";
  append_quoted(out, "v\"");
  EXPECT_EQ(out, R"({"k": "v\"")");
}

}  // namespace
}  // namespace hg::base::json
