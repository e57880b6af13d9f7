// hourglass-decode: prints one DNS message in dig's presentation format.
//
//   hourglass-decode packet.bin           raw message from a file
//   hourglass-decode < packet.bin         ... or from stdin
//   hourglass-decode --hex packet.hex     hex text (whitespace ignored, '#' comments allowed)
//
// A malformed message prints one line, "hourglass-decode: malformed message: <cause> at offset
// <N>", and exits 1; a usage or I/O problem exits 2.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "wire/format.h"
#include "wire/message.h"
#include "wire/print.h"

namespace {

std::optional<std::vector<uint8_t>> read_all(const std::string& path) {
  const bool use_stdin = path.empty() || path == "-";
  std::FILE* f = use_stdin ? stdin : std::fopen(path.c_str(), "rb");
  if (f == nullptr) return std::nullopt;
  std::vector<uint8_t> bytes;
  uint8_t buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    bytes.insert(bytes.end(), buf, buf + n);
  const bool failed = std::ferror(f) != 0;
  if (!use_stdin) std::fclose(f);
  if (failed) return std::nullopt;
  return bytes;
}

int hex_value(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Hex text to bytes: whitespace is ignored and '#' starts a comment to the end of the line.
// On bad input names the offending character's position in the text.
std::optional<std::vector<uint8_t>> from_hex(const std::vector<uint8_t>& text, std::string& err) {
  std::vector<uint8_t> out;
  int high = -1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const uint8_t c = text[i];
    if (c == '#') {
      while (i < text.size() && text[i] != '\n')
        ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    const int v = hex_value(c);
    if (v < 0) {
      err = fmt::format("not a hex digit at character {}", i);
      return std::nullopt;
    }
    if (high < 0) {
      high = v;
    } else {
      out.push_back(static_cast<uint8_t>(high << 4 | v));
      high = -1;
    }
  }
  if (high >= 0) {
    err = "odd number of hex digits";
    return std::nullopt;
  }
  return out;
}

int run(int argc, char** argv) {
  CLI::App app{"Prints one DNS message in dig's presentation format."};
  std::string path;
  bool hex = false;
  bool strict = false;
  app.add_option("file", path, "file holding the message (default: standard input)");
  app.add_flag("--hex", hex, "the input is hex text; whitespace and #-comments are ignored");
  app.add_flag("--strict", strict,
               "reject bytes after the last record (as for a client's query) instead of "
               "ignoring them");
  CLI11_PARSE(app, argc, argv);

  auto input = read_all(path);
  if (!input) {
    fmt::print(stderr, "hourglass-decode: cannot read {}\n", path);
    return 2;
  }
  std::vector<uint8_t> packet = std::move(*input);
  if (hex) {
    std::string err;
    auto bytes = from_hex(packet, err);
    if (!bytes) {
      fmt::print(stderr, "hourglass-decode: bad hex input: {}\n", err);
      return 2;
    }
    packet = std::move(*bytes);
  }

  hg::wire::Message msg;
  if (auto st =
          msg.parse(packet, strict ? hg::wire::ParseMode::Strict : hg::wire::ParseMode::Lenient);
      !st) {
    fmt::print("hourglass-decode: malformed message: {}\n", st.error());
    return 1;
  }
  fmt::print("{}", hg::wire::print_message(msg));
  fmt::print(";; MSG SIZE  {} bytes\n", packet.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Whatever is thrown past run() (std::bad_alloc, a CLI11 or fmt error, a bug) is reported
  // with its message and a failure status, rather than ending in std::terminate.
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hourglass-decode: %s\n", e.what());
    return 2;
  }
}
