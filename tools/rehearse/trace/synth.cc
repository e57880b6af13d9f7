// hourglass-rehearse synth: generated traces of a recording resolver (see synth.h).
#include "tools/rehearse/trace/synth.h"
#include "base/bytes.h"
#include "base/duration.h"
#include "tools/rehearse/common/cli_util.h"

#include <pcap/pcap.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>
#include <queue>

#include <fmt/format.h>

#include "dnstap/codec.h"
#include "tools/rehearse/common/commands.h"
#include "tools/rehearse/trace/frame_writer.h"

namespace hg::rehearse {
namespace {

constexpr int64_t kNs = 1'000'000'000;

// xoshiro256** seeded through splitmix64: small, fast, and the same everywhere (the standard
// distributions are not specified bit for bit across library versions, so none are used).
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& s : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      s = z ^ (z >> 31);
    }
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

enum class Kind : uint8_t { ClientQuery, ClientResponse, ForwarderQuery, ForwarderResponse };

struct Event {
  int64_t t;
  uint64_t seq;  // ties keep generation order
  Kind kind;
  uint16_t id, port;
  uint32_t name, client, ttl;
  int64_t query_t;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

// The recorder and its upstream (documentation addresses, RFC 5737).
constexpr uint8_t kRecorder[4] = {192, 0, 2, 53};
constexpr uint8_t kUpstream[4] = {192, 0, 2, 1};

class Writer {
 public:
  Writer(const SynthOptions& o, const std::vector<uint8_t>& qnames,
         const std::vector<uint32_t>& qname_at)
      : o_(o), qnames_(qnames), qname_at_(qname_at) {}
  ~Writer() { close(); }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  bool open(const std::string& path, std::string& error) {
    if (o_.format == SynthFormat::Dnstap) {
      if (!fw_.open(path)) {
        error = fmt::format("cannot create {}: {}", path, std::strerror(errno));
        return false;
      }
      return true;
    }
    pcap_ = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
    dump_ = pcap_ != nullptr ? pcap_dump_open(pcap_, path.c_str()) : nullptr;
    if (dump_ == nullptr) {
      error = fmt::format("cannot create {}: {}", path,
                          pcap_ != nullptr ? pcap_geterr(pcap_) : "pcap_open_dead failed");
      return false;
    }
    return true;
  }

  bool close() {
    bool ok = true;
    if (fw_.is_open()) ok = fw_.close();
    if (dump_ != nullptr) {
      ok = pcap_dump_flush(dump_) == 0;
      pcap_dump_close(dump_);
      dump_ = nullptr;
    }
    if (pcap_ != nullptr) {
      pcap_close(pcap_);
      pcap_ = nullptr;
    }
    return ok;
  }

  bool ok() const { return ok_; }
  uint64_t events() const { return events_; }

  void write(const Event& e) {
    const bool query = e.kind == Kind::ClientQuery || e.kind == Kind::ForwarderQuery;
    const std::size_t n = dns(e, query);
    if (o_.format == SynthFormat::Pcap) {
      if (e.kind == Kind::ForwarderQuery || e.kind == Kind::ForwarderResponse) return;
      packet(e, query, n);
      return;
    }
    uint8_t caddr[4];
    const bool upstream = e.kind == Kind::ForwarderQuery || e.kind == Kind::ForwarderResponse;
    dnstap::Message m;
    m.type =
        upstream
            ? (query ? dnstap::MessageType::ForwarderQuery : dnstap::MessageType::ForwarderResponse)
            : (query ? dnstap::MessageType::ClientQuery : dnstap::MessageType::ClientResponse);
    m.family = dnstap::Family::Inet;
    m.protocol = dnstap::Protocol::Udp;
    if (upstream) {
      m.query_address = kRecorder;
      m.response_address = kUpstream;
    } else {
      client_addr(e.client, caddr);
      m.query_address = caddr;
      m.response_address = kRecorder;
    }
    m.query_port = e.port;
    m.response_port = 53;
    m.query_time = dnstap::Timestamp{static_cast<uint64_t>(e.query_t / kNs),
                                     static_cast<uint32_t>(e.query_t % kNs)};
    if (!query)
      m.response_time =
          dnstap::Timestamp{static_cast<uint64_t>(e.t / kNs), static_cast<uint32_t>(e.t % kNs)};
    (query ? m.query_message : m.response_message) = std::span<const uint8_t>(msg_, n);
    static constexpr uint8_t kIdentity[] = {'s', 'y', 'n', 't', 'h'};
    m.identity = kIdentity;
    dnstap::encode(m, frame_);
    ok_ = fw_.write(frame_) && ok_;
    ++events_;
  }

 private:
  static void client_addr(uint32_t c, uint8_t out[4]) {
    const uint32_t a = 0x0a000001u + c;  // 10.0.0.1 onwards
    base::store_u32(out, a);
  }

  // The DNS message into msg_: a query, or an answer with one A record; returns its size.
  std::size_t dns(const Event& e, bool query) {
    uint8_t* p = msg_;
    auto u16 = [&p](uint32_t v) {
      *p++ = static_cast<uint8_t>(v >> 8);
      *p++ = static_cast<uint8_t>(v);
    };
    u16(e.id);
    u16(query ? 0x0100 : 0x8180);
    u16(1);
    u16(query ? 0 : 1);
    u16(0);
    u16(0);
    const uint32_t at = qname_at_[e.name], len = qname_at_[e.name + 1] - at;
    std::memcpy(p, qnames_.data() + at, len);
    p += len;
    u16(1);  // A
    u16(1);  // IN
    if (!query) {
      u16(0xc00c);
      u16(1);
      u16(1);
      u16(e.ttl >> 16);
      u16(e.ttl & 0xffff);
      u16(4);
      *p++ = 198;  // 198.18.0.0/15 (RFC 2544), one address per name
      *p++ = static_cast<uint8_t>(18 + ((e.name >> 16) & 1));
      *p++ = static_cast<uint8_t>(e.name >> 8);
      *p++ = static_cast<uint8_t>(e.name);
    }
    return static_cast<std::size_t>(p - msg_);
  }

  void packet(const Event& e, bool query, std::size_t n) {
    uint8_t* f = pkt_;
    static constexpr uint8_t kMacs[12] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2};
    std::memcpy(f, kMacs, 12);
    f[12] = 0x08, f[13] = 0x00;
    uint8_t* ip = f + 14;
    const std::size_t total = 20 + 8 + n;
    uint8_t caddr[4];
    client_addr(e.client, caddr);
    ip[0] = 0x45, ip[1] = 0;
    ip[2] = static_cast<uint8_t>(total >> 8), ip[3] = static_cast<uint8_t>(total);
    ip[4] = static_cast<uint8_t>(events_ >> 8), ip[5] = static_cast<uint8_t>(events_);
    ip[6] = 0x40, ip[7] = 0;  // DF
    ip[8] = 64, ip[9] = 17, ip[10] = 0, ip[11] = 0;
    std::memcpy(ip + 12, query ? caddr : kRecorder, 4);
    std::memcpy(ip + 16, query ? kRecorder : caddr, 4);
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2)
      sum += static_cast<uint32_t>(base::load_u16(&ip[i]));
    while (sum >> 16)
      sum = (sum & 0xffff) + (sum >> 16);
    ip[10] = static_cast<uint8_t>(~sum >> 8), ip[11] = static_cast<uint8_t>(~sum);
    uint8_t* udp = ip + 20;
    const uint16_t sport = query ? e.port : 53, dport = query ? 53 : e.port;
    udp[0] = static_cast<uint8_t>(sport >> 8), udp[1] = static_cast<uint8_t>(sport);
    udp[2] = static_cast<uint8_t>(dport >> 8), udp[3] = static_cast<uint8_t>(dport);
    udp[4] = static_cast<uint8_t>((8 + n) >> 8), udp[5] = static_cast<uint8_t>(8 + n);
    udp[6] = 0, udp[7] = 0;  // no UDP checksum (allowed over IPv4)
    std::memcpy(udp + 8, msg_, n);
    pcap_pkthdr h{};
    h.ts.tv_sec = e.t / kNs;
    h.ts.tv_usec = static_cast<suseconds_t>(e.t % kNs);  // nanoseconds: opened NANO
    h.caplen = h.len = static_cast<bpf_u_int32>(14 + total);
    pcap_dump(reinterpret_cast<u_char*>(dump_), &h, pkt_);
    ++events_;
  }

  const SynthOptions& o_;
  const std::vector<uint8_t>& qnames_;
  const std::vector<uint32_t>& qname_at_;
  FrameWriter fw_;
  pcap_t* pcap_ = nullptr;
  pcap_dumper_t* dump_ = nullptr;
  bool ok_ = true;
  uint64_t events_ = 0;
  uint8_t msg_[600];
  uint8_t pkt_[700];
  std::vector<uint8_t> frame_;
};

}  // namespace

std::string synth_name(const SynthOptions& o, uint64_t k) {
  return fmt::format("n{}.{}.", k, o.zone);
}

bool synthesize(const SynthOptions& o, const std::string& path, SynthResult& result,
                std::string& error) {
  result = SynthResult{};
  const std::size_t n = static_cast<std::size_t>(o.names);
  // Names in wire form, back to back.
  std::vector<uint8_t> qnames;
  std::vector<uint32_t> qname_at;
  qname_at.reserve(n + 1);
  for (std::size_t k = 0; k < n; ++k) {
    qname_at.push_back(static_cast<uint32_t>(qnames.size()));
    const std::string text = synth_name(o, k);
    std::size_t start = 0;
    while (start < text.size()) {
      const std::size_t dot = text.find('.', start);
      qnames.push_back(static_cast<uint8_t>(dot - start));
      qnames.insert(qnames.end(), text.begin() + static_cast<std::ptrdiff_t>(start),
                    text.begin() + static_cast<std::ptrdiff_t>(dot));
      start = dot + 1;
    }
    qnames.push_back(0);
  }
  qname_at.push_back(static_cast<uint32_t>(qnames.size()));

  // Popularity (Zipf) and TTLs, per name.
  std::vector<double> cdf(n);
  double total = 0;
  for (std::size_t k = 0; k < n; ++k) {
    total += std::pow(static_cast<double>(k + 1), -o.zipf);
    cdf[k] = total;
  }
  result.names.resize(n);
  Rng ttl_rng(o.seed ^ 0x7474'6c5f'7365'6564ULL);
  for (std::size_t k = 0; k < n; ++k) {
    auto& t = result.names[k];
    t.rate = o.qps * (cdf[k] - (k != 0 ? cdf[k - 1] : 0.0)) / total;
    if (o.ttl_min == o.ttl_max) {
      t.ttl = o.ttl_min;
    } else {
      const double lo = std::log(static_cast<double>(o.ttl_min));
      const double hi = std::log(static_cast<double>(o.ttl_max));
      t.ttl = static_cast<uint32_t>(std::lround(std::exp(lo + ttl_rng.uniform() * (hi - lo))));
      t.ttl = std::clamp(t.ttl, o.ttl_min, o.ttl_max);
    }
  }

  Writer w(o, qnames, qname_at);
  if (!w.open(path, error)) return false;

  struct CacheState {
    int64_t answer_at = INT64_MIN;  // the outstanding upstream answer's arrival
    int64_t expiry = INT64_MIN;
  };
  std::vector<CacheState> cache(n);
  std::priority_queue<Event, std::vector<Event>, std::greater<>> pending;
  Rng rng(o.seed);
  const auto rtt = static_cast<int64_t>(std::llround(o.rtt_ms * 1e6));
  const int64_t end = o.start_ns + static_cast<int64_t>(std::llround(o.duration_s * 1e9));
  uint64_t seq = 0;
  double t_s = 0;
  for (;;) {
    t_s += -std::log1p(-rng.uniform()) / o.qps;  // exponential gap: Poisson arrivals
    const int64_t t = o.start_ns + static_cast<int64_t>(std::llround(t_s * 1e9));
    const bool done = t >= end;
    while (!pending.empty() && (done || pending.top().t <= t)) {
      w.write(pending.top());
      pending.pop();
    }
    if (done) break;
    const double u = rng.uniform() * total;
    const auto k = static_cast<uint32_t>(std::min<std::size_t>(
        static_cast<std::size_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin()),
        n - 1));
    const uint64_t r = rng.next();
    Event q{t,
            seq++,
            Kind::ClientQuery,
            static_cast<uint16_t>(r),
            static_cast<uint16_t>(1024 + (r >> 16) % 64512),
            k,
            static_cast<uint32_t>((r >> 32) % o.clients),
            0,
            t};
    w.write(q);
    auto& truth = result.names[k];
    ++truth.queries;
    ++result.queries;
    CacheState& c = cache[k];
    Event a = q;
    a.kind = Kind::ClientResponse;
    if (t < c.answer_at) {  // coalesced with the outstanding miss
      a.t = c.answer_at;
      a.ttl = truth.ttl;
    } else if (t < c.expiry) {  // hit: the TTL counted down
      a.t = t + kServiceNs;
      a.ttl = static_cast<uint32_t>(std::max<int64_t>(0, c.expiry - a.t) / kNs);
    } else {  // miss
      ++truth.upstream;
      ++result.upstream;
      const uint64_t r2 = rng.next();
      Event fq{t,
               seq++,
               Kind::ForwarderQuery,
               static_cast<uint16_t>(r2),
               static_cast<uint16_t>(1024 + (r2 >> 16) % 64512),
               k,
               0,
               0,
               t};
      w.write(fq);
      Event fr = fq;
      fr.kind = Kind::ForwarderResponse;
      fr.t = t + rtt;
      fr.ttl = truth.ttl;
      fr.seq = seq++;
      pending.push(fr);
      c.answer_at = t + rtt;
      c.expiry = c.answer_at + int64_t{truth.ttl} * kNs;
      a.t = c.answer_at;
      a.ttl = truth.ttl;
    }
    a.seq = seq++;
    pending.push(a);
  }
  result.events = w.events();
  const bool ok = w.ok() && w.close();
  if (!ok) {
    error = fmt::format("writing {} failed: {}", path, std::strerror(errno));
    return false;
  }
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  result.bytes = ec ? 0 : size;
  return true;
}

namespace {

bool parse_u32(const std::string& s, uint32_t& out) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos)
    return false;
  const unsigned long long v = std::stoull(s);
  if (v > 0x7fffffffULL) return false;  // RFC 2181 §8: TTLs are 31-bit
  out = static_cast<uint32_t>(v);
  return true;
}

}  // namespace

int run_synth(int argc, char** argv) {
  CLI::App app{
      "Writes a generated trace of a recording resolver: Poisson arrivals over Zipf-popular\n"
      "names, a TTL cache (timer set on a miss), CLIENT_* for every query and FORWARDER_*\n"
      "for every miss (pcap: client traffic only).",
      "hourglass-rehearse synth"};
  SynthOptions o;
  std::string duration = "60", ttl = "300", format = "dnstap", output, truth;
  app.add_option("--names", o.names, "distinct names (default 1000)");
  app.add_option("--zipf", o.zipf, "Zipf exponent of popularity (default 1.0; 0 = uniform)");
  app.add_option("--qps", o.qps, "mean queries per second, Poisson (default 1000)");
  app.add_option("--duration", duration, "trace length: SECONDS or with s/m/h/d (default 60)");
  app.add_option("--ttl", ttl,
                 "TTL in seconds, or MIN-MAX for a per-name TTL drawn log-uniformly (default "
                 "300)");
  app.add_option("--seed", o.seed, "random seed: the same seed gives the same file (default 1)");
  app.add_option("--format", format, "dnstap or pcap (default dnstap)");
  app.add_option("-o,--output", output, "the trace file to write")->required();
  app.add_option("--rtt", o.rtt_ms, "the recorder's upstream round trip in ms (default 20)");
  app.add_option("--clients", o.clients, "distinct client addresses (default 256)");
  app.add_option("--truth", truth,
                 "also write per-name truth as CSV: rank,name,ttl,rate,queries,upstream");
  if (const auto exit = parse_or_exit(app, argc, argv, "synth")) return *exit;
  auto bad = [](const std::string& flag, const std::string& value, const char* allowed) {
    fmt::print(stderr, "hourglass-rehearse synth: {} {}: {}\n", flag, value, allowed);
    return 2;
  };
  if (o.names < 1 || o.names > 50'000'000)
    return bad("--names", std::to_string(o.names), "allowed 1..50000000");
  if (!(o.zipf >= 0 && o.zipf <= 10))
    return bad("--zipf", fmt::format("{}", o.zipf), "allowed 0..10");
  if (!(o.qps > 0 && o.qps <= 1e7))
    return bad("--qps", fmt::format("{}", o.qps), "allowed > 0 and at most 10000000");
  if (const auto d = base::parse_duration(duration);
      d && d->count() > 0 && d->count() <= int64_t{10'000'000'000}) {
    o.duration_s = static_cast<double>(d->count()) / 1000;
  } else {
    return bad("--duration", duration, "a positive number of seconds, optionally with s/m/h/d");
  }
  if (const auto dash = ttl.find('-'); dash != std::string::npos) {
    if (!parse_u32(ttl.substr(0, dash), o.ttl_min) || !parse_u32(ttl.substr(dash + 1), o.ttl_max) ||
        o.ttl_min < 1 || o.ttl_min > o.ttl_max)
      return bad("--ttl", ttl, "SECONDS or MIN-MAX with 1 <= MIN <= MAX <= 2147483647");
  } else {
    if (!parse_u32(ttl, o.ttl_min))
      return bad("--ttl", ttl, "SECONDS or MIN-MAX with 1 <= MIN <= MAX <= 2147483647");
    o.ttl_max = o.ttl_min;
  }
  if (format == "dnstap") {
    o.format = SynthFormat::Dnstap;
  } else if (format == "pcap") {
    o.format = SynthFormat::Pcap;
  } else {
    return bad("--format", format, "allowed dnstap, pcap");
  }
  if (!(o.rtt_ms >= 0 && o.rtt_ms <= 60'000))
    return bad("--rtt", fmt::format("{}", o.rtt_ms), "allowed 0..60000 (ms)");
  if (o.clients < 1 || o.clients > 16'000'000)
    return bad("--clients", std::to_string(o.clients), "allowed 1..16000000");

  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  SynthResult res;
  std::string error;
  if (!synthesize(o, output, res, error)) {
    fmt::print(stderr, "hourglass-rehearse synth: {}\n", error);
    return 2;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  if (!truth.empty()) {
    std::FILE* f = std::fopen(truth.c_str(), "w");
    if (f == nullptr) {
      fmt::print(stderr, "hourglass-rehearse synth: --truth {}: {}\n", truth, std::strerror(errno));
      return 2;
    }
    fmt::print(f, "rank,name,ttl,rate,queries,upstream\n");
    for (std::size_t k = 0; k < res.names.size(); ++k) {
      const auto& t = res.names[k];
      fmt::print(f, "{},{},{},{:.6g},{},{}\n", k + 1, synth_name(o, k), t.ttl, t.rate, t.queries,
                 t.upstream);
    }
    std::fclose(f);
  }
  fmt::print(
      "wrote {}: {}, {} queries over {} names, {} upstream (recorder hit ratio {:.4f}), {} "
      "events, {} bytes in {:.2f} s ({:.2f} s CPU)\n",
      output, format, res.queries, o.names, res.upstream,
      res.queries != 0 ? 1.0 - static_cast<double>(res.upstream) / static_cast<double>(res.queries)
                       : 0.0,
      res.events, res.bytes, secs, cpu);
  return 0;
}

}  // namespace hg::rehearse
