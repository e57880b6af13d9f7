// The dnstap trace reader: a Frame Streams file (a START control frame naming the content
// type, data frames each holding one protobuf dnstap.Dnstap, a STOP control frame), parsed
// here with every length checked against the bytes present and against limits, so that a
// corrupt or truncated file ends in ReadStatus::Bad with its offset — or, with skip_bad, in
// a count of skipped frames and a resynchronisation where the framing allows one.
//
// Frame Streams framing (all integers big-endian, 32 bits):
//   data frame:    LENGTH (> 0) | LENGTH bytes of payload
//   control frame: 0 (escape) | LENGTH | TYPE | fields: FIELD-TYPE FIELD-LENGTH bytes ...
//   control types: ACCEPT 1, START 2, STOP 3, READY 4, FINISH 5; field CONTENT_TYPE 1.
//
// The file is read through one sliding buffer; events point into it, so reading allocates
// nothing per event.
#include <algorithm>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "base/bytes.h"
#include "base/unix_time.h"
#include "dnstap/codec.h"
#include "tools/rehearse/trace/readers.h"

namespace hg::rehearse {
namespace {

constexpr uint32_t kControlStart = 2, kControlStop = 3;
constexpr uint32_t kFieldContentType = 1;
constexpr std::size_t kMaxControl = 512;          // the Frame Streams limit for control frames
constexpr std::size_t kMaxFrame = 1 << 20;        // a dnstap frame holds two DNS messages at most
constexpr std::size_t kReadChunk = 1 << 16;       // grows to the largest frame seen
constexpr std::size_t kMaxResyncScan = 16 << 20;  // bytes searched for the next good frame
constexpr std::string_view kDnstapType = "protobuf:dnstap.Dnstap";

class DnstapReader final : public TraceReader {
 public:
  DnstapReader(std::FILE* f, std::string name, const TraceOptions& options)
      : f_(f), name_(std::move(name)), opt_(options) {
    buf_.resize(kReadChunk);
  }
  ~DnstapReader() override { std::fclose(f_); }
  DnstapReader(const DnstapReader&) = delete;
  DnstapReader& operator=(const DnstapReader&) = delete;

  ReadStatus next(TraceEvent& ev) override;
  const TraceError& error() const override { return error_; }
  std::string describe() const override;
  uint64_t skipped() const override { return skipped_; }

 private:
  enum class State { Start, Data, AfterStop, End };

  uint64_t offset() const { return buf_off_ + pos_; }
  std::size_t avail() const { return len_ - pos_; }
  /// Makes n bytes available at pos_ (reading more of the file); false at the end of the file.
  bool ensure(std::size_t n);
  ReadStatus fail(uint64_t off, std::string what) {
    error_ = TraceError{name_, off, std::move(what)};
    state_ = State::End;
    return ReadStatus::Bad;
  }
  /// Reads a control frame at pos_ (escape included); its type in `type`. Bad on corruption.
  ReadStatus control(uint32_t& type);
  /// With skip_bad: searches forward from `from` for a frame that decodes. False: give up.
  bool resync(uint64_t from);
  /// Empty when the decoded message is usable, else why not.
  static std::string_view check(const dnstap::Message& m);
  bool to_event(const dnstap::Message& d, TraceEvent& ev);

  std::FILE* f_;
  std::string name_;
  TraceOptions opt_;
  TraceError error_;
  State state_ = State::Start;
  std::vector<uint8_t> buf_;
  std::size_t pos_ = 0, len_ = 0;  // buf_[pos_, len_) is unread file data
  uint64_t buf_off_ = 0;           // file offset of buf_[0]
  bool eof_ = false;
  std::string content_type_;
  dnstap::Message msg_;
  uint64_t frames_ = 0, skipped_ = 0, ignored_ = 0, no_message_ = 0;
  uint64_t by_type_[15] = {};
};

bool DnstapReader::ensure(std::size_t n) {
  if (avail() >= n) return true;
  if (eof_) return false;
  if (pos_ != 0) {  // slide the unread bytes to the front
    std::memmove(buf_.data(), buf_.data() + pos_, avail());
    buf_off_ += pos_;
    len_ -= pos_;
    pos_ = 0;
  }
  if (buf_.size() < n) buf_.resize(n);
  while (len_ < n) {
    const std::size_t got = std::fread(buf_.data() + len_, 1, buf_.size() - len_, f_);
    len_ += got;
    if (got == 0) {
      eof_ = true;
      break;
    }
  }
  return len_ >= n;
}

ReadStatus DnstapReader::control(uint32_t& type) {
  const uint64_t at = offset();
  if (!ensure(8))
    return fail(at, fmt::format("truncated control frame header: {} of 8 bytes", avail()));
  const uint32_t clen = base::load_u32(buf_.data() + pos_ + 4);
  if (clen < 4 || clen > kMaxControl)
    return fail(at, fmt::format("control frame length {} (allowed 4..{})", clen, kMaxControl));
  if (!ensure(8 + clen))
    return fail(at, fmt::format("truncated control frame: {} of {} bytes", avail(), 8 + clen));
  const uint8_t* c = buf_.data() + pos_ + 8;
  type = base::load_u32(c);
  std::size_t p = 4;
  while (p < clen) {
    if (clen - p < 8) return fail(at, fmt::format("control frame field header cut at byte {}", p));
    const uint32_t ftype = base::load_u32(c + p), flen = base::load_u32(c + p + 4);
    p += 8;
    if (flen > clen - p)
      return fail(at, fmt::format("control frame field of {} bytes overruns the frame", flen));
    if (ftype == kFieldContentType && type == kControlStart)
      content_type_.assign(reinterpret_cast<const char*>(c + p), flen);
    p += flen;
  }
  pos_ += 8 + clen;
  return ReadStatus::Event;
}

bool DnstapReader::resync(uint64_t from) {
  // Candidate frame starts, one byte at a time: a data frame whose payload decodes as dnstap,
  // or a STOP control frame. The scan is bounded, so a file of garbage ends, not hangs.
  if (from < buf_off_) return false;
  pos_ = static_cast<std::size_t>(from - buf_off_);
  for (std::size_t scanned = 0; scanned < kMaxResyncScan; ++scanned, ++pos_) {
    if (!ensure(4)) {
      pos_ = len_;
      return true;  // nothing decodable before the end of the file
    }
    const uint32_t len = base::load_u32(buf_.data() + pos_);
    if (len == 0) {
      if (ensure(12) && base::load_u32(buf_.data() + pos_ + 4) == 4 &&
          base::load_u32(buf_.data() + pos_ + 8) == kControlStop)
        return true;
      continue;
    }
    if (len < 4 || len > kMaxFrame || !ensure(4 + len)) continue;
    if (dnstap::decode({buf_.data() + pos_ + 4, len}, msg_) == dnstap::DecodeStatus::Ok &&
        check(msg_).empty())
      return true;
  }
  return false;
}

ReadStatus DnstapReader::next(TraceEvent& ev) {
  for (;;) {
    switch (state_) {
      case State::End:
        return error_.what.empty() ? ReadStatus::End : ReadStatus::Bad;
      case State::Start: {
        const uint64_t at = offset();
        if (!ensure(4) || base::load_u32(buf_.data() + pos_) != 0)
          return fail(at, "not a Frame Streams file: no START control frame");
        uint32_t type = 0;
        if (control(type) == ReadStatus::Bad) return ReadStatus::Bad;
        if (type != kControlStart)
          return fail(at, fmt::format("control frame type {} where START (2) belongs", type));
        if (!content_type_.empty() && content_type_ != kDnstapType)
          return fail(at,
                      fmt::format("content type \"{}\", not \"{}\"", content_type_, kDnstapType));
        state_ = State::Data;
        break;
      }
      case State::AfterStop:
        // Another stream may follow (a writer that reopened the file in append mode).
        if (!ensure(1)) {
          state_ = State::End;
          return ReadStatus::End;
        }
        state_ = State::Start;
        break;
      case State::Data: {
        const uint64_t at = offset();
        if (!ensure(4)) {
          if (avail() == 0 && opt_.skip_bad) {
            state_ = State::End;
            return ReadStatus::End;
          }
          if (avail() == 0)
            return fail(at,
                        "the file ends without a STOP frame: truncated, or its writer is still "
                        "running (--skip-bad reads what is there)");
          if (opt_.skip_bad) {
            ++skipped_;
            state_ = State::End;
            return ReadStatus::End;
          }
          return fail(at, fmt::format("truncated frame length: {} of 4 bytes", avail()));
        }
        const uint32_t len = base::load_u32(buf_.data() + pos_);
        if (len == 0) {
          uint32_t type = 0;
          if (control(type) == ReadStatus::Bad) {
            if (!opt_.skip_bad) return ReadStatus::Bad;
            error_ = TraceError{};
            state_ = State::Data;
            ++skipped_;
            if (!resync(at + 1)) return fail(at, "corrupt control frame; no frame to resume at");
            break;
          }
          if (type == kControlStop) {
            state_ = State::AfterStop;
          } else if (type == kControlStart) {
            // A second START without STOP: tolerated (a writer restarted); keep reading.
          } else {
            if (!opt_.skip_bad)
              return fail(at, fmt::format("control frame type {} inside a file", type));
            ++skipped_;
          }
          break;
        }
        if (len > kMaxFrame) {
          if (!opt_.skip_bad)
            return fail(
                at, fmt::format("frame length {} exceeds the limit of {} bytes", len, kMaxFrame));
          ++skipped_;
          if (!resync(at + 1)) return fail(at, "corrupt frame length; no frame to resume at");
          break;
        }
        if (!ensure(4 + std::size_t{len})) {
          if (opt_.skip_bad) {
            ++skipped_;
            state_ = State::End;
            return ReadStatus::End;
          }
          return fail(at, fmt::format("truncated frame: {} of {} bytes", avail() - 4, len));
        }
        ++frames_;
        const std::span<const uint8_t> payload{buf_.data() + pos_ + 4, len};
        pos_ += 4 + std::size_t{len};
        const dnstap::DecodeStatus st = dnstap::decode(payload, msg_);
        const std::string_view why =
            st != dnstap::DecodeStatus::Ok ? dnstap::to_string(st) : check(msg_);
        if (!why.empty()) {
          if (!opt_.skip_bad)
            return fail(at, fmt::format("frame {}: not a dnstap message: {}", frames_, why));
          ++skipped_;
          continue;
        }
        if (to_event(msg_, ev)) return ReadStatus::Event;
        break;
      }
    }
  }
}

std::string_view DnstapReader::check(const dnstap::Message& m) {
  for (const auto& t : {m.query_time, m.response_time})
    if (t && !base::unix_ns(t->sec, t->nsec)) return "time out of range";
  if (!m.query_address.empty() && m.query_address.size() != 4 && m.query_address.size() != 16)
    return "query_address is neither 4 nor 16 bytes";
  return {};
}

bool DnstapReader::to_event(const dnstap::Message& d, TraceEvent& ev) {
  const auto t = static_cast<uint32_t>(d.type);
  if (t < std::size(by_type_)) ++by_type_[t];
  Side side;
  switch (t) {
    case 1:  // AUTH_*: an authoritative's clients are resolvers
    case 2:
    case 5:  // CLIENT_*
    case 6:
    case 11:  // TOOL_*: kdig -E and the like, the tool being the client
    case 12:
      side = Side::Client;
      break;
    case 3:  // RESOLVER_*, FORWARDER_*, STUB_*: the recorder asking its upstream
    case 4:
    case 7:
    case 8:
    case 9:
    case 10:
      side = Side::Upstream;
      break;
    default:  // UPDATE_* and unknown types
      ++ignored_;
      return false;
  }
  const bool query = (t % 2) == 1;
  const std::span<const uint8_t> msg = query ? d.query_message : d.response_message;
  if (msg.empty()) {
    ++no_message_;
    return false;
  }
  auto ns = [](const std::optional<dnstap::Timestamp>& ts) -> int64_t {
    return ts ? base::unix_ns(ts->sec, ts->nsec).value_or(0) : 0;  // check() bounded both
  };
  const int64_t qt = ns(d.query_time);
  const int64_t rt = ns(d.response_time);
  ev = TraceEvent{};
  ev.side = side;
  ev.role = query ? Role::Query : Role::Response;
  ev.time_ns = query ? (qt != 0 ? qt : rt) : (rt != 0 ? rt : qt);
  ev.query_time_ns = query ? 0 : qt;
  using P = dnstap::Protocol;
  ev.tcp = d.protocol == P::Tcp || d.protocol == P::Dot || d.protocol == P::Doh ||
           d.protocol == P::DnsCryptTcp;
  if (d.family == dnstap::Family::Inet || (!d.family && d.query_address.size() == 4)) {
    ev.family = 4;
  } else if (d.family == dnstap::Family::Inet6 || (!d.family && d.query_address.size() == 16)) {
    ev.family = 6;
  }
  if (!d.query_address.empty())
    std::memcpy(ev.client_addr.data(), d.query_address.data(),
                std::min<std::size_t>(d.query_address.size(), 16));
  ev.client_port = static_cast<uint16_t>(d.query_port.value_or(0));
  ev.message = msg;
  ev.dnstap_type = static_cast<uint8_t>(t);
  return true;
}

std::string DnstapReader::describe() const {
  std::string s =
      fmt::format("dnstap ({})", content_type_.empty() ? "no content type" : content_type_);
  auto group = [&](const char* view, const char* prefix, uint32_t q) {
    const uint64_t n = by_type_[q] + by_type_[q + 1];
    if (n != 0) s += fmt::format(", {} ({}_*: {} messages)", view, prefix, n);
  };
  group("client view", "CLIENT", 5);
  group("authoritative view, clients are resolvers", "AUTH", 1);
  group("tool view, the tool is the client", "TOOL", 11);
  group("upstream", "FORWARDER", 7);
  group("upstream", "RESOLVER", 3);
  group("upstream", "STUB", 9);
  if (ignored_ != 0) s += fmt::format(", {} other messages ignored", ignored_);
  if (no_message_ != 0) s += fmt::format(", {} without a DNS message", no_message_);
  if (skipped_ != 0) s += fmt::format(", {} bad frames skipped", skipped_);
  return s;
}

}  // namespace

std::unique_ptr<TraceReader> make_dnstap_reader(std::FILE* file, const std::string& name,
                                                const TraceOptions& options) {
  return std::make_unique<DnstapReader>(file, name, options);
}

}  // namespace hg::rehearse
