// Helpers for the trace reader tests: DNS messages, packets and capture files built by hand.
#pragma once

#include <pcap/pcap.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.h"
#include "tests/support/temp_dir.h"
#include "tests/wire/packet_builder.h"
#include "tools/rehearse/trace/trace.h"

namespace hg::rehearse::test {

using Bytes = std::vector<uint8_t>;

/// A query (QR=0) or an answer with one A record of `ttl` for `name` ("www.example").
inline Bytes dns_message(uint16_t id, std::string_view name, bool response, uint32_t ttl = 300) {
  Bytes b;
  base::append_u16(b, id);
  base::append_u16(b, response ? 0x8180 : 0x0100);
  base::append_u16(b, 1);
  base::append_u16(b, response ? 1 : 0);
  base::append_u16(b, 0);
  base::append_u16(b, 0);
  const Bytes qname = wire::test::wire_name(name);
  b.insert(b.end(), qname.begin(), qname.end());
  base::append_u16(b, 1);
  base::append_u16(b, 1);
  if (response) {
    base::append_u16(b, 0xc00c);
    base::append_u16(b, 1);
    base::append_u16(b, 1);
    base::append_u32(b, ttl);
    base::append_u16(b, 4);
    base::append_u32(b, 0xc0000201);
  }
  return b;
}

struct Addr {
  uint8_t family = 4;
  std::array<uint8_t, 16> a{};
};
inline Addr v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  Addr x;
  x.a[0] = a, x.a[1] = b, x.a[2] = c, x.a[3] = d;
  return x;
}
inline Addr v6(uint8_t last) {
  Addr x;
  x.family = 6;
  x.a[0] = 0x20, x.a[1] = 0x01, x.a[2] = 0x0d, x.a[3] = 0xb8, x.a[15] = last;
  return x;
}

/// An IP packet (no link header) carrying `l4` with protocol `proto` (17 UDP, 6 TCP).
/// For IPv4, frag_off (in 8-byte units) / more set the fragment fields.
inline Bytes ip_packet(const Addr& src, const Addr& dst, uint8_t proto, const Bytes& l4,
                       uint16_t frag_units = 0, bool more = false, uint16_t ip_id = 7) {
  Bytes b;
  if (src.family == 4) {
    b.push_back(0x45);
    b.push_back(0);
    base::append_u16(b, static_cast<uint16_t>(20 + l4.size()));
    base::append_u16(b, ip_id);
    base::append_u16(b, static_cast<uint16_t>((more ? 0x2000 : 0) | frag_units));
    b.push_back(64);
    b.push_back(proto);
    base::append_u16(b, 0);
    b.insert(b.end(), src.a.begin(), src.a.begin() + 4);
    b.insert(b.end(), dst.a.begin(), dst.a.begin() + 4);
  } else {
    const bool frag = frag_units != 0 || more;
    base::append_u32(b, 0x60000000);
    base::append_u16(b, static_cast<uint16_t>(l4.size() + (frag ? 8 : 0)));
    b.push_back(frag ? 44 : proto);
    b.push_back(64);
    b.insert(b.end(), src.a.begin(), src.a.end());
    b.insert(b.end(), dst.a.begin(), dst.a.end());
    if (frag) {
      b.push_back(proto);
      b.push_back(0);
      base::append_u16(b, static_cast<uint16_t>((frag_units << 3) | (more ? 1 : 0)));
      base::append_u32(b, ip_id);
    }
  }
  b.insert(b.end(), l4.begin(), l4.end());
  return b;
}

inline Bytes udp(uint16_t sport, uint16_t dport, const Bytes& payload) {
  Bytes b;
  base::append_u16(b, sport);
  base::append_u16(b, dport);
  base::append_u16(b, static_cast<uint16_t>(8 + payload.size()));
  base::append_u16(b, 0);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

inline Bytes tcp(uint16_t sport, uint16_t dport, uint32_t seq, uint8_t flags, const Bytes& data) {
  Bytes b;
  base::append_u16(b, sport);
  base::append_u16(b, dport);
  base::append_u32(b, seq);
  base::append_u32(b, 0);
  b.push_back(0x50);
  b.push_back(flags);
  base::append_u16(b, 65535);
  base::append_u32(b, 0);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

/// DNS over TCP framing: a 2-byte length before the message.
inline Bytes framed(const Bytes& msg) {
  Bytes b;
  base::append_u16(b, static_cast<uint16_t>(msg.size()));
  b.insert(b.end(), msg.begin(), msg.end());
  return b;
}

/// Wraps an IP packet in the link header of `dlt`.
inline Bytes link_frame(int dlt, const Bytes& ip, bool vlan = false) {
  Bytes b;
  const bool is6 = (ip[0] >> 4) == 6;
  const uint16_t ethertype = is6 ? 0x86dd : 0x0800;
  switch (dlt) {
    case DLT_EN10MB:
      for (int i = 0; i < 12; ++i)
        b.push_back(static_cast<uint8_t>(i));
      if (vlan) base::append_u16(b, 0x8100), base::append_u16(b, 42);
      base::append_u16(b, ethertype);
      break;
    case DLT_LINUX_SLL:
      base::append_u16(b, 0), base::append_u16(b, 772), base::append_u16(b, 6);
      for (int i = 0; i < 8; ++i)
        b.push_back(0);
      base::append_u16(b, ethertype);
      break;
    case DLT_LINUX_SLL2:
      base::append_u16(b, ethertype), base::append_u16(b, 0), base::append_u32(b, 1),
          base::append_u16(b, 772);
      b.push_back(0), b.push_back(6);
      for (int i = 0; i < 8; ++i)
        b.push_back(0);
      break;
    case DLT_NULL: {  // host byte order: little-endian here
      const uint32_t af = is6 ? 10 : 2;
      for (int i = 0; i < 4; ++i)
        b.push_back(static_cast<uint8_t>(af >> (8 * i)));
      break;
    }
    case DLT_LOOP:
      base::append_u32(b, is6 ? 24 : 2);
      break;
    default:  // DLT_RAW
      break;
  }
  b.insert(b.end(), ip.begin(), ip.end());
  return b;
}

struct Packet {
  int64_t t_ns;
  Bytes frame;
};

/// Writes packets with libpcap's own writer (nanosecond timestamps).
inline void write_pcap(const std::string& path, int dlt, const std::vector<Packet>& pkts) {
  pcap_t* p = pcap_open_dead_with_tstamp_precision(dlt, 65535, PCAP_TSTAMP_PRECISION_NANO);
  pcap_dumper_t* d = pcap_dump_open(p, path.c_str());
  for (const auto& pk : pkts) {
    pcap_pkthdr h{};
    h.ts.tv_sec = pk.t_ns / 1'000'000'000;
    h.ts.tv_usec = static_cast<suseconds_t>(pk.t_ns % 1'000'000'000);
    h.caplen = h.len = static_cast<bpf_u_int32>(pk.frame.size());
    pcap_dump(reinterpret_cast<u_char*>(d), &h, pk.frame.data());
  }
  pcap_dump_close(d);
  pcap_close(p);
}

inline Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}
inline void write_file(const std::string& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

using TempDir = hg::test::TempDir;

/// Reads every event (copying messages); stops at End or Bad.
struct ReadAll {
  std::vector<TraceEvent> events;
  std::vector<Bytes> messages;
  ReadStatus last = ReadStatus::End;
};
inline ReadAll read_all(TraceReader& r, std::size_t limit = 1'000'000) {
  ReadAll out;
  TraceEvent ev;
  while (out.events.size() < limit) {
    out.last = r.next(ev);
    if (out.last != ReadStatus::Event) break;
    out.messages.emplace_back(ev.message.begin(), ev.message.end());
    out.events.push_back(ev);
  }
  return out;
}

}  // namespace hg::rehearse::test
