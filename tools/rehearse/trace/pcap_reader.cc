// The pcap / pcapng trace reader: libpcap reads the file (pcap_fopen_offline handles both
// formats), this file takes the packets apart: link layer (Ethernet with VLAN tags, Linux
// cooked v1 and v2, raw IP, BSD loopback), IPv4 and IPv6 (extension headers, fragments
// reassembled), UDP, and TCP (streams reassembled, RFC 1035 §4.2.2 length-prefixed messages).
//
// Every header is checked against the bytes captured before it is read. A UDP packet is
// handed out as a view into libpcap's own buffer: nothing is allocated per UDP event. Memory
// grows with the fragments and TCP streams in flight, both capped and expired by trace time.
#include <pcap/pcap.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "base/bytes.h"
#include "base/hash.h"
#include "base/unix_time.h"
#include "tools/rehearse/trace/readers.h"

namespace hg::rehearse {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kFragmentTimeout = 30 * kSecond;    // RFC 791 suggests 15 s; generous
constexpr int64_t kStreamIdle = 120 * kSecond;        // a TCP stream silent this long is gone
constexpr std::size_t kMaxFragments = 1024;           // reassemblies in flight
constexpr std::size_t kMaxStreams = 65536;            // TCP streams in flight
constexpr std::size_t kMaxStreamBuffer = 256 * 1024;  // per stream, in order + out of order
constexpr std::size_t kMatchSlots = 1 << 14;          // query-time table (direct mapped)

struct Endpoints {
  uint8_t family = 0;  // 4 or 6
  std::array<uint8_t, 16> src{};
  std::array<uint8_t, 16> dst{};
};

struct FragKey {
  uint8_t family;
  uint8_t proto;
  uint32_t id;
  std::array<uint8_t, 16> src, dst;
  bool operator==(const FragKey&) const = default;
};

struct Reassembly {
  FragKey key;
  int64_t first_ns = 0;
  std::vector<uint8_t> data;                         // the transport payload so far
  std::vector<std::pair<uint32_t, uint32_t>> parts;  // [begin, end) received
  uint32_t total = 0;                                // known once the last fragment came
  bool has_last = false;
};

struct StreamKey {
  uint8_t family;
  std::array<uint8_t, 16> src, dst;
  uint16_t sport, dport;
  bool operator==(const StreamKey&) const = default;
};

struct StreamKeyHash {
  std::size_t operator()(const StreamKey& k) const noexcept {
    uint64_t h = base::fnv1a(k.dst, base::fnv1a(k.src, base::kFnv1aBasis ^ k.family));
    h ^= (uint64_t{k.sport} << 16) | k.dport;
    h *= base::kFnv1aPrime;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

struct Stream {
  bool synced = false;  // next_seq is known
  bool lost = false;    // a gap could not be filled: ignore data until a new SYN
  uint32_t next_seq = 0;
  int64_t last_ns = 0;
  std::vector<uint8_t> buf;                      // in-order bytes not yet a whole message
  std::map<uint32_t, std::vector<uint8_t>> ooo;  // out-of-order segments by sequence number
  std::size_t ooo_bytes = 0;
};

// Sequence number comparison modulo 2^32 (RFC 1982 style).
bool seq_lt(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(a - b) < 0;
}

class PcapReader final : public TraceReader {
 public:
  PcapReader(pcap_t* p, std::string name, const TraceOptions& options)
      : p_(p), name_(std::move(name)), opt_(options), link_(pcap_datalink(p)) {
    match_.resize(kMatchSlots);
  }
  ~PcapReader() override { pcap_close(p_); }
  PcapReader(const PcapReader&) = delete;
  PcapReader& operator=(const PcapReader&) = delete;

  ReadStatus next(TraceEvent& ev) override;
  const TraceError& error() const override { return error_; }
  std::string describe() const override;
  uint64_t skipped() const override {
    return skipped_fragments_ + skipped_tcp_ + skipped_bad_ + skipped_bad_time_ +
           skipped_truncated_;
  }

 private:
  bool decode_link(const uint8_t* d, std::size_t n, int64_t t, TraceEvent& ev);
  bool decode_ip(const uint8_t* d, std::size_t n, int64_t t, TraceEvent& ev);
  bool decode_transport(uint8_t proto, const Endpoints& ep, const uint8_t* d, std::size_t n,
                        int64_t t, TraceEvent& ev);
  bool fragment(const FragKey& key, uint32_t offset, bool more, const uint8_t* d, std::size_t n,
                int64_t t, const Endpoints& ep, TraceEvent& ev);
  void tcp_segment(const Endpoints& ep, const uint8_t* d, std::size_t n, int64_t t);
  void drain_stream(const StreamKey& key, Stream& s, int64_t t);
  bool pop_tcp(TraceEvent& ev);
  bool fill(TraceEvent& ev, const Endpoints& ep, uint16_t sport, uint16_t dport, bool tcp,
            std::span<const uint8_t> msg, int64_t t);
  void expire(int64_t t);
  ReadStatus fail(uint64_t offset, std::string what) {
    error_ = TraceError{name_, offset, std::move(what)};
    bad_ = true;
    return ReadStatus::Bad;
  }

  pcap_t* p_;
  std::string name_;
  TraceOptions opt_;
  int link_;
  TraceError error_;
  bool ended_ = false;
  bool bad_ = false;  // sticky: a Bad file stays Bad
  uint64_t packets_ = 0;
  uint64_t events_ = 0;
  uint64_t tcp_messages_ = 0;
  uint64_t reassembled_ = 0;
  uint64_t skipped_fragments_ = 0;
  uint64_t skipped_tcp_ = 0;
  uint64_t skipped_bad_ = 0;
  uint64_t skipped_bad_time_ = 0;  // records whose timestamp is out of range
  uint64_t skipped_truncated_ = 0;
  int64_t last_expire_ns_ = 0;

  std::vector<Reassembly> frags_;
  std::vector<uint8_t> frag_out_;  // a completed reassembly's payload, valid for one event
  std::unordered_map<StreamKey, Stream, StreamKeyHash> streams_;
  struct PendingTcp {
    TraceEvent ev;  // message filled in on pop
    std::size_t begin, size;
  };
  std::vector<PendingTcp> tcp_pending_;
  std::vector<uint8_t> tcp_bytes_;
  std::size_t tcp_next_ = 0;

  struct Slot {
    uint64_t key = 0;
    int64_t time_ns = 0;
  };
  std::vector<Slot> match_;
};

std::string PcapReader::describe() const {
  std::string s = fmt::format(
      "pcap ({}), client view (DNS on port {})",
      pcap_datalink_val_to_name(link_) ? pcap_datalink_val_to_name(link_) : "unknown link type",
      opt_.port);
  if (tcp_messages_ != 0) s += fmt::format(", {} DNS messages from TCP streams", tcp_messages_);
  if (reassembled_ != 0) s += fmt::format(", {} packets reassembled from fragments", reassembled_);
  if (skipped_fragments_ != 0)
    s += fmt::format(", {} fragmented packets skipped (incomplete)", skipped_fragments_);
  if (skipped_tcp_ != 0)
    s += fmt::format(", {} TCP gaps or partial messages skipped", skipped_tcp_);
  if (skipped_bad_ != 0) s += fmt::format(", {} malformed packets skipped", skipped_bad_);
  if (skipped_bad_time_ != 0)
    s += fmt::format(", {} skipped for a timestamp out of range", skipped_bad_time_);
  if (skipped_truncated_ != 0) s += ", a truncated last record skipped";
  return s;
}

ReadStatus PcapReader::next(TraceEvent& ev) {
  if (bad_) return ReadStatus::Bad;
  for (;;) {
    if (pop_tcp(ev)) return ReadStatus::Event;
    if (ended_) return ReadStatus::End;
    std::FILE* f = pcap_file(p_);
    const long pos = f != nullptr ? std::ftell(f) : -1;
    const uint64_t offset = pos < 0 ? 0 : static_cast<uint64_t>(pos);
    pcap_pkthdr* hdr = nullptr;
    const u_char* data = nullptr;
    const int rc = pcap_next_ex(p_, &hdr, &data);
    if (rc == PCAP_ERROR_BREAK) {  // end of file
      ended_ = true;
      // Streams still holding part of a message at the end: those messages are lost.
      for (auto& [k, s] : streams_)
        if (!s.buf.empty() || !s.ooo.empty()) ++skipped_tcp_;
      streams_.clear();
      skipped_fragments_ += frags_.size();
      frags_.clear();
      continue;
    }
    if (rc != 1) {
      // libpcap cannot resynchronise inside a capture file. A record cut short at the end of
      // the file (a capture still running, or a copied prefix) is skippable; anything else
      // is a corrupt file.
      const bool at_eof = f != nullptr && std::feof(f) != 0;
      if (opt_.skip_bad && at_eof) {
        ++skipped_truncated_;
        ended_ = true;
        continue;
      }
      return fail(offset, fmt::format("packet record {}: {}", packets_ + 1, pcap_geterr(p_)));
    }
    ++packets_;
    // tv_usec holds nanoseconds: the file was opened with PCAP_TSTAMP_PRECISION_NANO.
    const std::optional<int64_t> at = base::unix_ns(hdr->ts.tv_sec, hdr->ts.tv_usec);
    if (!at) {
      if (opt_.skip_bad) {
        ++skipped_bad_time_;
        continue;
      }
      return fail(offset, fmt::format("packet record {}: timestamp {}.{:09} s is out of range "
                                      "(after the year 2255 or negative)",
                                      packets_, static_cast<int64_t>(hdr->ts.tv_sec),
                                      static_cast<int64_t>(hdr->ts.tv_usec)));
    }
    const int64_t t = *at;
    if (t - last_expire_ns_ > kSecond || t < last_expire_ns_) expire(t);
    const std::size_t caplen = std::min<std::size_t>(hdr->caplen, hdr->len);
    if (decode_link(data, caplen, t, ev)) {
      ++events_;
      return ReadStatus::Event;
    }
  }
}

bool PcapReader::decode_link(const uint8_t* d, std::size_t n, int64_t t, TraceEvent& ev) {
  switch (link_) {
    case DLT_EN10MB: {
      if (n < 14) return false;
      std::size_t off = 12;
      uint16_t type = base::load_u16(d + off);
      // Up to two VLAN tags (802.1Q, 802.1ad QinQ).
      for (int tags = 0; tags < 2 && (type == 0x8100 || type == 0x88a8 || type == 0x9100); ++tags) {
        off += 4;
        if (n < off + 2) return false;
        type = base::load_u16(d + off);
      }
      off += 2;
      if (type != 0x0800 && type != 0x86dd) return false;
      return decode_ip(d + off, n - off, t, ev);
    }
    case DLT_LINUX_SLL: {
      if (n < 16) return false;
      const uint16_t type = base::load_u16(d + 14);
      if (type != 0x0800 && type != 0x86dd) return false;
      return decode_ip(d + 16, n - 16, t, ev);
    }
    case DLT_LINUX_SLL2: {
      if (n < 20) return false;
      const uint16_t type = base::load_u16(d);
      if (type != 0x0800 && type != 0x86dd) return false;
      return decode_ip(d + 20, n - 20, t, ev);
    }
    case DLT_NULL:
    case DLT_LOOP:
      // A 4-byte address family, in the writer's byte order (NULL) or network order (LOOP);
      // AF_INET6 differs between systems, so the IP version nibble decides instead.
      if (n < 4) return false;
      return decode_ip(d + 4, n - 4, t, ev);
    case DLT_RAW:
    case DLT_IPV4:
    case DLT_IPV6:
      return decode_ip(d, n, t, ev);
    default:
      return false;
  }
}

bool PcapReader::decode_ip(const uint8_t* d, std::size_t n, int64_t t, TraceEvent& ev) {
  if (n < 1) return false;
  Endpoints ep;
  const int version = d[0] >> 4;
  if (version == 4) {
    if (n < 20) return false;
    const std::size_t ihl = std::size_t{d[0] & 0x0fu} * 4;
    const std::size_t total = base::load_u16(d + 2);
    if (ihl < 20 || total < ihl || n < ihl) {
      ++skipped_bad_;
      return false;
    }
    if (total < n) n = total;  // Ethernet padding
    ep.family = 4;
    std::memcpy(ep.src.data(), d + 12, 4);
    std::memcpy(ep.dst.data(), d + 16, 4);
    const uint8_t proto = d[9];
    if (proto != 17 && proto != 6) return false;
    const uint16_t frag = base::load_u16(d + 6);
    const bool more = (frag & 0x2000) != 0;
    const uint32_t foff = uint32_t{frag & 0x1fffu} * 8;
    if (more || foff != 0) {
      if (total > n) {  // a fragment cut by the snap length cannot be reassembled
        ++skipped_fragments_;
        return false;
      }
      FragKey key{4, proto, base::load_u16(d + 4), ep.src, ep.dst};
      return fragment(key, foff, more, d + ihl, n - ihl, t, ep, ev);
    }
    return decode_transport(proto, ep, d + ihl, n - ihl, t, ev);
  }
  if (version == 6) {
    if (n < 40) return false;
    const std::size_t plen = base::load_u16(d + 4);
    if (40 + plen < n) n = 40 + plen;
    ep.family = 6;
    std::memcpy(ep.src.data(), d + 8, 16);
    std::memcpy(ep.dst.data(), d + 24, 16);
    uint8_t nh = d[6];
    std::size_t off = 40;
    // Walk the extension headers (RFC 8200 §4): hop-by-hop, routing, destination options,
    // fragment. Bounded by the packet: each step advances at least 8 bytes.
    for (int steps = 0; steps < 16; ++steps) {
      if (nh == 17 || nh == 6) return decode_transport(nh, ep, d + off, n - off, t, ev);
      if (nh == 0 || nh == 43 || nh == 60) {
        if (n < off + 8) return false;
        const uint8_t next = d[off];
        off += (std::size_t{d[off + 1]} + 1) * 8;
        if (off > n) return false;
        nh = next;
        continue;
      }
      if (nh == 44) {
        if (n < off + 8) return false;
        const uint8_t next = d[off];
        const uint16_t fo = base::load_u16(d + off + 2);
        const uint32_t id = base::load_u32(d + off + 4);
        off += 8;
        if (next != 17 && next != 6) return false;
        const bool more = (fo & 1) != 0;
        const uint32_t foff = uint32_t{fo & 0xfff8u};
        if (!more && foff == 0) {  // an atomic fragment (RFC 6946)
          nh = next;
          continue;
        }
        if (40 + plen > n) {  // cut by the snap length
          ++skipped_fragments_;
          return false;
        }
        FragKey key{6, next, id, ep.src, ep.dst};
        return fragment(key, foff, more, d + off, n - off, t, ep, ev);
      }
      return false;  // no DNS inside (ICMPv6, ESP, ...)
    }
    return false;
  }
  return false;
}

bool PcapReader::fragment(const FragKey& key, uint32_t offset, bool more, const uint8_t* d,
                          std::size_t n, int64_t t, const Endpoints& ep, TraceEvent& ev) {
  auto it =
      std::find_if(frags_.begin(), frags_.end(), [&](const Reassembly& r) { return r.key == key; });
  if (it == frags_.end()) {
    if (frags_.size() >= kMaxFragments) {
      ++skipped_fragments_;
      frags_.erase(frags_.begin());  // the oldest
    }
    frags_.push_back(Reassembly{key, t, {}, {}, 0, false});
    it = frags_.end() - 1;
  }
  Reassembly& r = *it;
  const uint32_t end = offset + static_cast<uint32_t>(n);
  if (end > 65535 || (r.has_last && end > r.total) || (!more && end < r.data.size())) {
    ++skipped_fragments_;
    frags_.erase(it);
    return false;
  }
  if (r.data.size() < end) r.data.resize(end);
  if (n != 0) std::memcpy(r.data.data() + offset, d, n);
  r.parts.emplace_back(offset, end);
  if (!more) {
    r.has_last = true;
    r.total = end;
  }
  if (!r.has_last) return false;
  // Complete when the received ranges cover [0, total).
  std::sort(r.parts.begin(), r.parts.end());
  uint32_t covered = 0;
  for (const auto& [b, e] : r.parts) {
    if (b > covered) return false;
    covered = std::max(covered, e);
  }
  if (covered < r.total) return false;
  frag_out_.assign(r.data.begin(), r.data.begin() + r.total);
  const uint8_t proto = r.key.proto;
  frags_.erase(it);
  ++reassembled_;
  return decode_transport(proto, ep, frag_out_.data(), frag_out_.size(), t, ev);
}

bool PcapReader::fill(TraceEvent& ev, const Endpoints& ep, uint16_t sport, uint16_t dport, bool tcp,
                      std::span<const uint8_t> msg, int64_t t) {
  if (msg.size() < 12) {
    ++skipped_bad_;
    return false;
  }
  bool query;
  if (dport == opt_.port && sport != opt_.port) {
    query = true;
  } else if (sport == opt_.port && dport != opt_.port) {
    query = false;
  } else {
    query = (msg[2] & 0x80) == 0;  // port to port: the QR bit decides
  }
  ev = TraceEvent{};
  ev.side = Side::Client;
  ev.role = query ? Role::Query : Role::Response;
  ev.time_ns = t;
  ev.tcp = tcp;
  ev.family = ep.family;
  ev.client_port = query ? sport : dport;
  ev.client_addr = query ? ep.src : ep.dst;
  ev.message = msg;
  // Remember the query's time under (client, port, ID, question) so that its response can
  // carry query_time_ns; a direct-mapped table, so a collision only loses that one match.
  uint64_t seed = (uint64_t{ev.client_port} << 16) | base::load_u16(&msg[0]);
  seed ^= static_cast<uint64_t>(tcp) << 40;
  for (std::size_t i = 0; i < 16; i += 8) {
    uint64_t w;
    std::memcpy(&w, ev.client_addr.data() + i, 8);
    seed = (seed ^ w) * 0x9e3779b97f4a7c15ULL;
  }
  const uint64_t key = question_hash(msg, seed) | 1;  // never 0 (0 marks an empty slot)
  Slot& slot = match_[key & (kMatchSlots - 1)];
  if (query) {
    slot = Slot{key, t};
  } else if (slot.key == key) {
    ev.query_time_ns = slot.time_ns;
    slot.key = 0;
  }
  return true;
}

bool PcapReader::decode_transport(uint8_t proto, const Endpoints& ep, const uint8_t* d,
                                  std::size_t n, int64_t t, TraceEvent& ev) {
  if (proto == 17) {
    if (n < 8) return false;
    const uint16_t sport = base::load_u16(d), dport = base::load_u16(d + 2);
    if (sport != opt_.port && dport != opt_.port) return false;
    std::size_t len = base::load_u16(d + 4);
    if (len < 8) {
      ++skipped_bad_;
      return false;
    }
    if (len > n) {  // cut by the snap length: the DNS message is incomplete
      ++skipped_bad_;
      return false;
    }
    return fill(ev, ep, sport, dport, false, {d + 8, len - 8}, t);
  }
  if (n < 20) return false;
  const uint16_t sport = base::load_u16(d), dport = base::load_u16(d + 2);
  if (sport != opt_.port && dport != opt_.port) return false;
  tcp_segment(ep, d, n, t);
  return pop_tcp(ev);
}

void PcapReader::tcp_segment(const Endpoints& ep, const uint8_t* d, std::size_t n, int64_t t) {
  const std::size_t doff = std::size_t{static_cast<uint8_t>(d[12] >> 4)} * 4;
  if (doff < 20 || doff > n) {
    ++skipped_bad_;
    return;
  }
  const uint8_t flags = d[13];
  const bool syn = (flags & 0x02) != 0, fin = (flags & 0x01) != 0, rst = (flags & 0x04) != 0;
  StreamKey key{ep.family, ep.src, ep.dst, base::load_u16(d), base::load_u16(d + 2)};
  uint32_t seq = base::load_u32(d + 4);
  const uint8_t* payload = d + doff;
  std::size_t plen = n - doff;

  auto it = streams_.find(key);
  if (it == streams_.end()) {
    if (plen == 0 && !syn) return;  // a bare ACK or FIN of a stream we never saw
    if (streams_.size() >= kMaxStreams) {
      ++skipped_tcp_;
      return;
    }
    it = streams_.emplace(key, Stream{}).first;
  }
  Stream& s = it->second;
  s.last_ns = t;
  if (syn) {
    s = Stream{};
    s.last_ns = t;
    s.synced = true;
    s.next_seq = seq + 1;
    seq += 1;
  } else if (!s.synced && !s.lost) {
    // Joined mid-stream: assume the first data we see starts a message.
    s.synced = true;
    s.next_seq = seq;
  }
  if (!s.lost && plen != 0) {
    if (seq_lt(seq, s.next_seq)) {  // retransmission, maybe partly new
      const uint32_t dup = s.next_seq - seq;
      if (dup >= plen) {
        plen = 0;
      } else {
        payload += dup;
        plen -= dup;
        seq = s.next_seq;
      }
    }
    if (plen != 0) {
      if (seq == s.next_seq) {
        s.buf.insert(s.buf.end(), payload, payload + plen);
        s.next_seq += static_cast<uint32_t>(plen);
        // Out-of-order segments that now fit.
        while (!s.ooo.empty()) {
          auto o = s.ooo.begin();
          if (seq_lt(s.next_seq, o->first)) break;
          const uint32_t skip = s.next_seq - o->first;
          if (skip < o->second.size()) {
            s.buf.insert(s.buf.end(), o->second.begin() + skip, o->second.end());
            s.next_seq += static_cast<uint32_t>(o->second.size() - skip);
          }
          s.ooo_bytes -= o->second.size();
          s.ooo.erase(o);
        }
      } else if (s.ooo_bytes + plen <= kMaxStreamBuffer && s.ooo.size() < 1024) {
        s.ooo_bytes += plen;
        s.ooo.emplace(seq, std::vector<uint8_t>(payload, payload + plen));
      } else {
        // A gap never filled: the messages across it are lost for good.
        ++skipped_tcp_;
        s.lost = true;
        s.buf.clear();
        s.ooo.clear();
        s.ooo_bytes = 0;
      }
      if (s.buf.size() > kMaxStreamBuffer) {
        ++skipped_tcp_;
        s.lost = true;
        s.buf.clear();
      }
    }
  }
  drain_stream(key, s, t);
  if (fin || rst) {
    if (!s.buf.empty() || !s.ooo.empty()) ++skipped_tcp_;
    streams_.erase(it);
  }
}

void PcapReader::drain_stream(const StreamKey& key, Stream& s, int64_t t) {
  std::size_t pos = 0;
  while (s.buf.size() - pos >= 2) {
    const std::size_t len = base::load_u16(s.buf.data() + pos);
    if (s.buf.size() - pos - 2 < len) break;
    Endpoints ep;
    ep.family = key.family;
    ep.src = key.src;
    ep.dst = key.dst;
    TraceEvent ev;
    const std::size_t begin = tcp_bytes_.size();
    tcp_bytes_.insert(tcp_bytes_.end(), s.buf.begin() + static_cast<std::ptrdiff_t>(pos + 2),
                      s.buf.begin() + static_cast<std::ptrdiff_t>(pos + 2 + len));
    if (fill(ev, ep, key.sport, key.dport, true, {tcp_bytes_.data() + begin, len}, t)) {
      tcp_pending_.push_back(PendingTcp{ev, begin, len});
    } else {
      tcp_bytes_.resize(begin);
    }
    pos += 2 + len;
  }
  if (pos != 0) s.buf.erase(s.buf.begin(), s.buf.begin() + static_cast<std::ptrdiff_t>(pos));
}

bool PcapReader::pop_tcp(TraceEvent& ev) {
  if (tcp_next_ >= tcp_pending_.size()) {
    tcp_pending_.clear();
    tcp_bytes_.clear();
    tcp_next_ = 0;
    return false;
  }
  const PendingTcp& p = tcp_pending_[tcp_next_++];
  ev = p.ev;
  ev.message = {tcp_bytes_.data() + p.begin, p.size};  // tcp_bytes_ may have moved since
  ++tcp_messages_;
  return true;
}

void PcapReader::expire(int64_t t) {
  last_expire_ns_ = t;
  const auto old_frags = frags_.size();
  std::erase_if(frags_, [&](const Reassembly& r) { return t - r.first_ns > kFragmentTimeout; });
  skipped_fragments_ += old_frags - frags_.size();
  for (auto it = streams_.begin(); it != streams_.end();) {
    if (t - it->second.last_ns > kStreamIdle) {
      if (!it->second.buf.empty() || !it->second.ooo.empty()) ++skipped_tcp_;
      it = streams_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace

std::unique_ptr<TraceReader> make_pcap_reader(std::FILE* file, const std::string& name,
                                              const TraceOptions& options, TraceError& error) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  pcap_t* p = pcap_fopen_offline_with_tstamp_precision(file, PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (p == nullptr) {
    std::fclose(file);
    error = TraceError{name, 0, fmt::format("pcap: {}", errbuf)};
    return nullptr;
  }
  return std::make_unique<PcapReader>(p, name, options);
}

}  // namespace hg::rehearse
