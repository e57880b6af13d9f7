// open_trace (choose a reader by magic bytes), TraceError, TraceMerger, question_hash.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "base/bytes.h"
#include "base/hash.h"
#include "tools/rehearse/trace/readers.h"
#include "tools/rehearse/trace/trace.h"

namespace hg::rehearse {

std::string TraceError::to_string() const {
  return fmt::format("{}: offset {}: {}", file, offset, what);
}

namespace {

enum class Kind { Unknown, Empty, FrameStreams, Pcap };

Kind sniff(const uint8_t* b, std::size_t n) {
  if (n == 0) return Kind::Empty;
  if (n < 4) return Kind::Unknown;
  const uint32_t be = base::load_u32(b);
  // Frame Streams: a file opens with a control frame, announced by a zero-length escape.
  if (be == 0) return Kind::FrameStreams;
  // pcap (micro- and nanosecond, either byte order) and pcapng's Section Header Block.
  switch (be) {
    case 0xa1b2c3d4:
    case 0xd4c3b2a1:
    case 0xa1b23c4d:
    case 0x4d3cb2a1:
    case 0x0a0d0d0a:
      return Kind::Pcap;
    default:
      return Kind::Unknown;
  }
}

std::unique_ptr<TraceReader> open_stream(std::FILE* f, const std::string& name,
                                         const TraceOptions& options, TraceError& error) {
  uint8_t magic[4];
  const std::size_t n = std::fread(magic, 1, sizeof magic, f);
  error = TraceError{name, 0, {}};
  switch (sniff(magic, n)) {
    case Kind::Empty:
      error.what = "empty file";
      std::fclose(f);
      return nullptr;
    case Kind::Unknown:
      error.what = "not a trace: neither Frame Streams (dnstap) nor pcap/pcapng magic bytes";
      std::fclose(f);
      return nullptr;
    case Kind::FrameStreams:
      std::rewind(f);
      return make_dnstap_reader(f, name, options);
    case Kind::Pcap:
      std::rewind(f);
      return make_pcap_reader(f, name, options, error);
  }
  std::fclose(f);
  return nullptr;
}

}  // namespace

std::unique_ptr<TraceReader> open_trace(const std::string& path, const TraceOptions& options,
                                        TraceError& error) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    error = TraceError{path, 0, fmt::format("cannot open: {}", std::strerror(errno))};
    return nullptr;
  }
  return open_stream(f, path, options, error);
}

std::unique_ptr<TraceReader> open_trace_memory(std::span<const uint8_t> bytes,
                                               const std::string& name, const TraceOptions& options,
                                               TraceError& error) {
  if (bytes.empty()) {
    error = TraceError{name, 0, "empty file"};
    return nullptr;
  }
  // fmemopen only reads in "r" mode; the cast drops const for its signature alone.
  std::FILE* f = fmemopen(const_cast<uint8_t*>(bytes.data()), bytes.size(), "r");
  if (f == nullptr) {
    error = TraceError{name, 0, fmt::format("fmemopen: {}", std::strerror(errno))};
    return nullptr;
  }
  return open_stream(f, name, options, error);
}

// ---- TraceMerger ----

void TraceMerger::add(std::unique_ptr<TraceReader> reader) {
  Head h;
  h.reader = std::move(reader);
  readers_.push_back(std::move(h));
}

ReadStatus TraceMerger::next(TraceEvent& ev) {
  // Refill the reader whose event went out last (its buffer may now be reused), or all of them
  // on the first call. Readers are few (one per file): a linear scan beats a heap here.
  auto refill = [&](Head& h) -> bool {
    h.live = false;
    if (h.done) return true;
    const ReadStatus st = h.reader->next(h.ev);
    if (st == ReadStatus::Event) {
      h.live = true;
    } else if (st == ReadStatus::End) {
      h.done = true;
    } else {
      error_ = h.reader->error();
      return false;
    }
    return true;
  };
  if (!primed_) {
    primed_ = true;
    for (auto& h : readers_)
      if (!refill(h)) return ReadStatus::Bad;
  } else if (last_ < readers_.size()) {
    if (!refill(readers_[last_])) return ReadStatus::Bad;
  }
  std::size_t best = SIZE_MAX;
  for (std::size_t i = 0; i < readers_.size(); ++i) {
    if (!readers_[i].live) continue;
    if (best == SIZE_MAX || readers_[i].ev.time_ns < readers_[best].ev.time_ns) best = i;
  }
  last_ = best;
  if (best == SIZE_MAX) return ReadStatus::End;
  ev = readers_[best].ev;
  return ReadStatus::Event;
}

std::string TraceMerger::describe() const {
  std::string out;
  for (const auto& h : readers_) {
    if (!out.empty()) out += "; ";
    out += h.reader->describe();
  }
  return out;
}

uint64_t TraceMerger::skipped() const {
  uint64_t n = 0;
  for (const auto& h : readers_)
    n += h.reader->skipped();
  return n;
}

// ---- question_hash ----

uint64_t question_hash(std::span<const uint8_t> msg, uint64_t seed) {
  // FNV-1a over the lowercased question, finished with a 64-bit mixer.
  uint64_t h = base::kFnv1aBasis ^ seed;
  auto mix = [&h](uint8_t b) { h = base::fnv1a_step(h, b); };
  auto finish = [](uint64_t x) { return base::fmix64(x); };
  if (msg.size() < 12 || (base::load_u16(&msg[4])) == 0) return finish(h);
  std::size_t pos = 12;
  uint64_t name_h = h;
  for (int labels = 0; labels < 128; ++labels) {
    if (pos >= msg.size()) return finish(h);
    const uint8_t len = msg[pos];
    if (len == 0) {
      ++pos;
      if (pos + 4 > msg.size()) return finish(h);
      for (int i = 0; i < 4; ++i)
        mix(msg[pos + static_cast<std::size_t>(i)]);
      return finish(h);
    }
    if (len > 63 || pos + 1 + len > msg.size()) {
      h = name_h;  // compressed or malformed question: the seed alone
      return finish(h);
    }
    mix(len);
    for (std::size_t i = pos + 1; i <= pos + len; ++i) {
      uint8_t c = msg[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<uint8_t>(c + 32);
      mix(c);
    }
    pos += 1 + len;
  }
  return finish(name_h);
}

bool open_traces(const std::vector<std::string>& files, const TraceOptions& topts,
                 TraceMerger& merger) {
  for (const auto& f : files) {
    TraceError err;
    auto reader = open_trace(f, topts, err);
    if (!reader) {
      std::fprintf(stderr, "%s\n", err.to_string().c_str());
      return false;
    }
    merger.add(std::move(reader));
  }
  return true;
}

}  // namespace hg::rehearse
