// Persist: writing and reading the cache file (format in persist.h).
#include "cache/persist.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/bytes.h"
#include "base/checked_open.h"
#include "base/crc32c.h"
#include "wire/header.h"
#include "wire/message.h"
#include "wire/reader.h"
#include "wire/reencode.h"

namespace hg::cache::persist {
namespace {

constexpr std::array<uint8_t, 8> kMagic = {0x89, 'H', 'G', 'C', 'A', 'C', 'H', 'E'};
constexpr uint8_t kFlagDo = 1;
constexpr uint8_t kFlagCd = 2;

// One entry as a DNS message with its stored TTLs (see the format in persist.h).
void append_message(std::vector<uint8_t>& out, const Entry& e) {
  const std::size_t start = out.size();
  const std::size_t len = wire::kHeaderSize + e.question_size() + e.sections().size();
  out.resize(start + len);
  uint8_t* p = out.data() + start;
  wire::Header h;
  h.set(wire::flag::QR, true);
  h.set(wire::flag::RA, true);
  h.set(wire::flag::AD, e.authentic_data());
  h.set(wire::flag::CD, e.checking_disabled());
  h.set_rcode_low(e.rcode());
  h.qdcount = 1;
  h.ancount = e.ancount();
  h.nscount = e.nscount();
  h.arcount = e.arcount();
  h.write_unchecked(p);
  p += wire::kHeaderSize;
  const auto qname = e.qname_wire();
  std::memcpy(p, qname.data(), qname.size());
  base::store_u16(p + qname.size(), static_cast<uint16_t>(e.qtype()));
  base::store_u16(p + qname.size() + 2, e.qclass());
  p += e.question_size();
  std::memcpy(p, e.sections().data(), e.sections().size());
  for (const Entry::Record& r : e.records())
    base::store_u32(p + r.ttl_offset, r.ttl);
}

LoadReport rejected(std::string problem) {
  LoadReport r;
  r.status = LoadReport::Status::Rejected;
  r.problem = std::move(problem);
  return r;
}

// Where an entry's message lies in the file, with its key flags and insert time.
struct Slot {
  std::size_t offset;
  uint16_t length;
  uint8_t flags;
  WallTime inserted;
};

// The fields of a file's 32-byte header after the magic number; nullopt when it is shorter.
struct FileHeader {
  uint32_t version = 0;
  uint32_t count = 0;
  uint64_t saved_at_ms = 0;
  uint64_t payload = 0;
};

std::optional<FileHeader> read_header(std::span<const uint8_t> bytes) noexcept {
  wire::WireReader r(bytes, kMagic.size());
  const auto version = r.u32();
  const auto count = r.u32();
  const auto saved_at_ms = r.u64();
  const auto payload = r.u64();
  if (!version || !count || !saved_at_ms || !payload) return std::nullopt;
  return FileHeader{*version, *count, *saved_at_ms, *payload};
}

std::string errno_text(int err) {
  return std::strerror(err);
}

}  // namespace

Time to_monotonic(WallTime inserted_wall, Time now, WallTime now_wall) noexcept {
  if (inserted_wall >= now_wall) return now;
  // The file's times are untrusted: an age beyond a century (or one that overflows) is
  // simply a century, which puts any entry far past its stale window.
  constexpr int64_t kMaxAgeMs = int64_t{100} * 366 * 86400 * 1000;
  int64_t age = 0;
  if (__builtin_sub_overflow(now_wall.time_since_epoch().count(),
                             inserted_wall.time_since_epoch().count(), &age) ||
      age > kMaxAgeMs) {
    age = kMaxAgeMs;
  }
  return now - Millis{age};
}

WallTime to_wall(Time inserted_at, Time now, WallTime now_wall) noexcept {
  if (inserted_at >= now) return now_wall;
  return now_wall - (now - inserted_at);
}

std::vector<uint8_t> encode(std::vector<std::shared_ptr<const Entry>> entries, Time now,
                            WallTime now_wall, Seconds stale_max) {
  std::erase_if(entries, [&](const auto& e) { return now >= e->expires_at() + stale_max; });
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a->inserted_at() < b->inserted_at(); });
  std::size_t total = kHeaderSize + kTrailerSize;
  for (const auto& e : entries)
    total += kEntryHeaderSize + wire::kHeaderSize + e->question_size() + e->sections().size();

  std::vector<uint8_t> out;
  out.reserve(total);
  out.resize(kHeaderSize);
  std::memcpy(out.data(), kMagic.data(), kMagic.size());
  base::store_u32(out.data() + 8, kFormatVersion);
  base::store_u32(out.data() + 12, static_cast<uint32_t>(entries.size()));
  base::store_u64(out.data() + 16, static_cast<uint64_t>(now_wall.time_since_epoch().count()));
  // The payload length (offset 24) is set at the end.
  for (const auto& e : entries) {
    const WallTime inserted = to_wall(e->inserted_at(), now, now_wall);
    base::append_u64(out, static_cast<uint64_t>(inserted.time_since_epoch().count()));
    out.push_back(static_cast<uint8_t>((e->dnssec_ok() ? kFlagDo : 0) |
                                       (e->checking_disabled() ? kFlagCd : 0)));
    const std::size_t len = wire::kHeaderSize + e->question_size() + e->sections().size();
    base::append_u16(out, static_cast<uint16_t>(len));  // an entry holds at most one 64 KiB message
    append_message(out, *e);
  }
  base::store_u64(out.data() + 24, out.size() - kHeaderSize);
  const uint32_t crc = base::crc32c(std::span<const uint8_t>(out).subspan(kMagic.size()));
  base::append_u32(out, crc);
  return out;
}

std::optional<LoadReport> check_header(std::span<const uint8_t> header, uint64_t file_size) {
  if (header.size() < kMagic.size() || !std::equal(kMagic.begin(), kMagic.end(), header.begin()))
    return rejected("not an hourglass cache file (no magic number)");
  const auto h = read_header(header);
  if (!h || file_size < kHeaderSize)
    return rejected("truncated (" + std::to_string(file_size) + " bytes)");
  const uint32_t version = h->version;
  if (version > kFormatVersion) {
    LoadReport r =
        rejected("format version " + std::to_string(version) +
                 " is newer than this hourglassd reads (" + std::to_string(kFormatVersion) + ")");
    r.newer = true;
    return r;
  }
  if (version != kFormatVersion)
    return rejected("unknown format version " + std::to_string(version));
  const uint64_t payload = h->payload;
  const uint64_t have = file_size - kHeaderSize;
  if (payload > have || have - payload < kTrailerSize) {
    // The header's length is untrusted: say what it claims without overflowing.
    const uint64_t claimed = payload > UINT64_MAX - kHeaderSize - kTrailerSize
                                 ? UINT64_MAX
                                 : payload + kHeaderSize + kTrailerSize;
    return rejected("truncated (" + std::to_string(file_size) + " bytes, the header says " +
                    std::to_string(claimed) + ")");
  }
  if (have - payload != kTrailerSize) {
    return rejected("corrupt (" + std::to_string(have - payload - kTrailerSize) +
                    " bytes after the checksum)");
  }
  return std::nullopt;
}

std::string fallback_path(const std::string& path) {
  return path + ".v" + std::to_string(kFormatVersion);
}

LoadReport load(Cache& cache, std::span<const uint8_t> file, Time now, WallTime now_wall) {
  if (auto bad = check_header(file.first(std::min(file.size(), kHeaderSize)), file.size()))
    return std::move(*bad);
  // check_header() has matched the header's payload length with the file's size.
  const auto h = read_header(file);
  if (!h) return rejected("truncated (" + std::to_string(file.size()) + " bytes)");
  const uint32_t count = h->count;
  const uint64_t payload = h->payload;
  const std::size_t end = kHeaderSize + static_cast<std::size_t>(payload);
  wire::WireReader trailer(file, end);
  const auto stored_crc = trailer.u32();
  if (!stored_crc || base::crc32c(file.subspan(kMagic.size(), end - kMagic.size())) != *stored_crc)
    return rejected("corrupt (checksum mismatch)");
  // A file from the future: the clock was set back since it was saved, or it is forged. Its
  // entries' ages cannot be known, and loading them as "just inserted" would stretch their
  // TTLs by however far ahead they claim to be.
  const WallTime saved_at{Millis{static_cast<int64_t>(h->saved_at_ms)}};
  if (saved_at > now_wall + kFutureSkew) {
    const auto ahead = std::chrono::duration_cast<Seconds>(saved_at - now_wall);
    return rejected("saved " + std::to_string(ahead.count()) +
                    " s in the future (the clock was set back since, or the file is forged)");
  }

  // Pass 1: the structure of every entry, before anything touches the cache.
  std::vector<Slot> slots;
  slots.reserve(std::min<std::size_t>(count, payload / (kEntryHeaderSize + 17)));
  wire::Message msg;
  wire::WireReader in(file.first(end), kHeaderSize);  // the entries, up to the checksum
  for (uint32_t i = 0; i < count; ++i) {
    const std::string which = "entry " + std::to_string(i + 1) + " of " + std::to_string(count);
    const auto inserted_ms = in.u64();
    const auto flags_field = in.u8();
    const auto len_field = in.u16();
    if (!inserted_ms || !flags_field || !len_field)
      return rejected("corrupt (" + which + " is cut short)");
    const auto wall = static_cast<int64_t>(*inserted_ms);
    const uint8_t flags = *flags_field;
    const uint16_t len = *len_field;
    if ((flags & ~(kFlagDo | kFlagCd)) != 0)
      return rejected("corrupt (" + which + " has unknown key flags)");
    // Entries are written with times up to the save time, never later.
    if (WallTime{Millis{wall}} > saved_at)
      return rejected("corrupt (" + which + " was inserted after the file was saved)");
    const std::size_t at = in.offset();
    const auto entry = in.bytes(len);
    if (!entry) return rejected("corrupt (" + which + " is cut short)");
    const std::span<const uint8_t> bytes = *entry;
    if (auto st = msg.parse(bytes, wire::ParseMode::Strict); !st) {
      return rejected("corrupt (" + which + ": " + std::string(wire::to_string(st.error().code)) +
                      ")");
    }
    const wire::Header& hd = msg.header();
    if (!hd.qr() || hd.opcode() != wire::Opcode::Query || msg.questions().size() != 1 ||
        msg.edns().has_value()) {
      return rejected("corrupt (" + which + " is not a cached answer)");
    }
    slots.push_back(Slot{at, len, flags, WallTime{Millis{wall}}});
  }
  if (!in.at_end()) return rejected("corrupt (bytes after the last entry)");

  // Pass 2: age each entry and offer it to the cache as an upstream answer.
  LoadReport r;
  r.status = LoadReport::Status::Loaded;
  r.in_file = count;
  r.saved_at = saved_at;
  const Seconds stale_max = cache.settings().stale_max;
  wire::AnswerNormalizer normalizer;
  for (const Slot& s : slots) {
    const Time inserted = to_monotonic(s.inserted, now, now_wall);
    if (!msg.parse(file.subspan(s.offset, s.length), wire::ParseMode::Strict)) {
      ++r.refused;  // cannot happen: pass 1 parsed the same bytes
      continue;
    }
    // The entry expires with its shortest stored TTL; past its stale window it is not loaded.
    uint32_t shortest = UINT32_MAX;
    for (const wire::RecordView& rr : msg.records())
      shortest = std::min(shortest, rr.ttl);
    if (msg.records().empty()) shortest = 0;
    if (now >= inserted + Seconds{shortest} + stale_max) {
      ++r.expired;
      continue;
    }
    // Re-encoded by our writer, as the daemon does with an upstream answer: a crafted file
    // could hold compression pointers into fields the cache rewrites per client.
    if (normalizer.normalize(file.subspan(s.offset, s.length)) != wire::NormalizeStatus::Ok) {
      ++r.refused;
      continue;
    }
    const wire::Message& clean = normalizer.message();
    const wire::Question& q = clean.questions().front();
    const CacheKey key =
        CacheKey::make(q.name, q.type, q.klass, (s.flags & kFlagDo) != 0, (s.flags & kFlagCd) != 0);
    if (cache.insert(key, clean, inserted) != InsertOutcome::Cached) {
      ++r.refused;
    } else if (!cache.peek(key, now)) {
      // Today's TTL policy (cache-max-ttl, a ttl-cap) shortened it past its stale window.
      cache.erase(key);
      ++r.expired;
    } else {
      ++r.loaded;
    }
  }
  return r;
}

FileRules rules_for(const Cache& cache) {
  FileRules r;
  r.max_bytes = cache.settings().max_bytes;
  r.owner = static_cast<uint32_t>(base::daemon_uid());
  return r;
}

namespace {

// Reads exactly `n` bytes at `offset`; false on an error or a short file.
bool read_at(int fd, uint8_t* out, std::size_t n, uint64_t offset, int& err) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, out + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      err = errno;
      return false;
    }
    if (r == 0) {
      err = 0;
      return false;
    }
    got += static_cast<std::size_t>(r);
  }
  return true;
}

// Closes the descriptor on every path out of load_file().
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

LoadReport load_file(Cache& cache, const std::string& path, Time now, WallTime now_wall,
                     const FileRules& rules) {
  // The shared rules (base/checked_open.h, which generalises this file's): O_NOFOLLOW (a
  // symbolic link as the last component is refused, whatever it points at), O_NONBLOCK (a
  // FIFO cannot wedge the start), a regular file, owned by root or hourglassd's user, that
  // no group or other user may write. Then this file's own rule: its owner is the user that
  // saves it.
  base::TrustedFd t = base::open_trusted(path);
  if (!t.ok()) {
    if (t.refused.empty() && t.error == ENOENT) return LoadReport{};
    if (!t.refused.empty()) return rejected(t.refused);
    return rejected("cannot open: " + errno_text(t.error));
  }
  Fd f{-1};
  std::swap(f.fd, t.fd);
  const struct stat st = t.st;
  if (st.st_uid != rules.owner) {  // root's: loaded as root, it would be saved as the user
    return rejected("owned by uid " + std::to_string(st.st_uid) + ", not by uid " +
                    std::to_string(rules.owner) +
                    " that hourglassd runs as; refused, since another user may have written "
                    "it: remove it, or chown it if you trust it");
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > rules.max_bytes) {
    return rejected("is " + std::to_string(size) + " bytes, larger than the whole cache (" +
                    std::to_string(rules.max_bytes) +
                    " bytes), which a cache this size never writes; not read (the next save "
                    "replaces it)");
  }
  // The header first: the magic, version and length must match before the rest is read.
  std::array<uint8_t, kHeaderSize> head{};
  const std::size_t head_len = static_cast<std::size_t>(std::min<uint64_t>(size, kHeaderSize));
  int err = 0;
  if (!read_at(f.fd, head.data(), head_len, 0, err)) {
    if (err != 0) return rejected("cannot read: " + errno_text(err));
    return rejected("changed while being read (shorter than its size)");
  }
  if (auto bad = check_header(std::span<const uint8_t>(head).first(head_len), size))
    return std::move(*bad);
  std::vector<uint8_t> bytes(static_cast<std::size_t>(size));
  std::memcpy(bytes.data(), head.data(), kHeaderSize);
  if (!read_at(f.fd, bytes.data() + kHeaderSize, bytes.size() - kHeaderSize, kHeaderSize, err)) {
    if (err != 0) return rejected("cannot read: " + errno_text(err));
    return rejected("changed while being read (shorter than its size)");
  }
  return load(cache, bytes, now, now_wall);
}

LoadReport load_file(Cache& cache, const std::string& path, Time now, WallTime now_wall) {
  return load_file(cache, path, now, now_wall, rules_for(cache));
}

namespace {

// True when the file at `path` is one of ours with a newer format version (a rollback must
// not overwrite it). Never blocks and never follows a final symbolic link.
bool holds_newer_version(const std::string& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY)};
  if (f.fd < 0) return false;
  struct stat st = {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  std::array<uint8_t, kHeaderSize> head{};
  int err = 0;
  if (static_cast<uint64_t>(st.st_size) < kHeaderSize ||
      !read_at(f.fd, head.data(), head.size(), 0, err))
    return false;
  const auto bad = check_header(head, static_cast<uint64_t>(st.st_size));
  return bad && bad->newer;
}

}  // namespace

SaveReport save_file(const Cache& cache, const std::string& path, Time now, WallTime now_wall) {
  return save_entries(cache.snapshot(), cache.settings().stale_max, path, now, now_wall);
}

SaveReport save_entries(std::vector<std::shared_ptr<const Entry>> entries, Seconds stale_max,
                        const std::string& path_asked, Time now, WallTime now_wall) {
  SaveReport r;
  r.path = path_asked;
  if (holds_newer_version(path_asked)) {
    r.path = fallback_path(path_asked);
    r.diverted = path_asked + " holds a newer format version, left as it is";
  }
  const std::string& path = r.path;
  const std::vector<uint8_t> bytes = encode(std::move(entries), now, now_wall, stale_max);
  if (const auto h = read_header(bytes)) r.entries = h->count;
  r.bytes = bytes.size();

  const std::size_t slash = path.rfind('/');
  std::string dir = ".";
  if (slash != std::string::npos) dir = slash == 0 ? "/" : path.substr(0, slash);
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);  // O_EXCL, mode 0600 & ~umask
  if (fd < 0) {
    r.error = "cannot create a temporary file next to " + path + ": " + errno_text(errno);
    return r;
  }
  auto fail = [&](const std::string& what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    r.error = what + " " + tmp + ": " + errno_text(err);
    return r;
  };
  // Exactly 0600, whatever the umask took away or not.
  if (::fchmod(fd, S_IRUSR | S_IWUSR) != 0) return fail("cannot chmod");
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write");
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("cannot fsync");
  if (::close(fd) != 0) {
    r.error = "cannot close " + tmp + ": " + errno_text(errno);
    ::unlink(tmp.c_str());
    return r;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    r.error = "cannot rename " + tmp + " to " + path + ": " + errno_text(errno);
    ::unlink(tmp.c_str());
    return r;
  }
  // The rename is durable once the directory is on disk too.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  r.ok = true;
  return r;
}

}  // namespace hg::cache::persist
