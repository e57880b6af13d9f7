// Fuzz target: the routing parsers (resolver/query/local_names.h) — a --forward spec and a hosts
// file, both untrusted text — and the answers built from what they accept. The first byte
// picks the parser; the rest is its input. Any input must give a value or a one-line error,
// never a crash; every name a hosts file yields must be routed and answered with a message
// that parses and fits its limit, and the compact table (resolver/query/hosts_table.h) parsed
// straight from the text must hold the same names and addresses.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "resolver/query/admission.h"
#include "resolver/query/hosts_table.h"
#include "resolver/query/local_names.h"
#include "resolver/routing_settings.h"
#include "wire/message.h"

namespace {

using namespace hg::resolver;

// A query for `name` with `type`, through admission as a client's would go.
void ask(const Routing& r, const hg::wire::Name& name, uint16_t type, std::size_t limit) {
  std::vector<uint8_t> q = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  const auto w = name.wire();
  q.insert(q.end(), w.begin(), w.end());
  q.insert(q.end(), {static_cast<uint8_t>(type >> 8), static_cast<uint8_t>(type), 0, 1});
  hg::wire::Message scratch;
  ClientQuery cq;
  std::vector<uint8_t> err(512);
  if (admit_query(q, true, scratch, cq, err).action != Admission::Resolve) return;
  const auto m = r.route(*cq.qname, cq.qtype);
  if (m.kind == RouteKind::Upstream || m.kind == RouteKind::Forward) return;
  std::vector<uint8_t> out(limit);
  hg::wire::RCode rc{};
  const std::size_t n = r.answer(m, cq, out, limit, rc);
  if (n == 0 || n > limit) std::abort();
  hg::wire::Message msg;
  if (!msg.parse(std::span<const uint8_t>(out.data(), n), hg::wire::ParseMode::Strict))
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 3 == 2) {
    auto rec = parse_local_record(text);
    if (!rec) {
      if (rec.error().find('\n') != std::string::npos) std::abort();
      return 0;
    }
    Routing::Input in;
    in.records.push_back(rec.value());
    auto r = Routing::build(in);
    if (!r) std::abort();
    for (const uint16_t t : std::initializer_list<uint16_t>{1, 28, 5, 12, 16, 15, 33, 255})
      ask(*r.value(), rec->name, t, 512);
    return 0;
  }
  if (data[0] % 3 == 0) {
    auto f = parse_forward_spec(text);
    if (!f) {
      if (f.error().find('\n') != std::string::npos) std::abort();
      return 0;
    }
    if (f->servers.empty() || f->servers.size() > 8) std::abort();
    Routing::Input in;
    in.forward.push_back(f.value());
    auto r = Routing::build(in);
    if (!r) return 0;
    auto zone = hg::wire::Name::from_text(f->zone);
    if (!zone || r.value()->route(zone.value(), hg::wire::RRType::A).kind != RouteKind::Forward)
      std::abort();
    return 0;
  }
  auto p = parse_hosts(text);
  for (const auto& e : p.errors)
    if (e.find('\n') != std::string::npos) std::abort();
  std::vector<std::string> errors;
  auto table = HostsTable::parse("fuzz", text, errors);
  if (table == nullptr || errors.size() < p.errors.size()) std::abort();
  for (const auto& e : errors)
    if (e.find('\n') != std::string::npos) std::abort();
  for (const auto& l : p.lines) {
    if (table->find_address(std::span<const uint8_t>(l.addr.data(), l.family == 2 ? 4 : 16)) ==
        HostsTable::kNone)
      std::abort();
    for (const auto& nw : l.names) {
      std::vector<uint8_t> low(nw.begin(), nw.end());
      for (auto& c : low)
        c = hg::wire::ascii_lower(c);
      const uint32_t e = table->find(low);
      if (e == HostsTable::kNone || table->address_ids(e).empty() ||
          table->address_ids(e).size() > kMaxHostsAddressesPerName)
        std::abort();
    }
  }
  Routing::Input in;
  in.hosts.push_back(HostsFile{"fuzz", p.lines});
  in.tables.push_back(table);  // the same file twice: merged answers
  // --no-special-zone localhost lets hosts lines name localhost; --single-label forward.
  if (data[0] & 4) in.no_special = {"localhost", "test"};
  in.single_label_forward = (data[0] & 8) != 0;
  auto r = Routing::build(in);
  if (!r) std::abort();  // hosts lines alone always build
  std::size_t asked = 0;
  for (const auto& l : p.lines) {
    for (const auto& nw : l.names) {
      auto name = hg::wire::Name::from_wire(
          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(nw.data()), nw.size()));
      if (!name) std::abort();  // the parser keeps only valid names
      for (const uint16_t t : std::initializer_list<uint16_t>{1, 28, 12, 255, 15})
        ask(*r.value(), name.value(), t, asked % 2 ? 512 : 65535);
      if (++asked > 64) return 0;
    }
    ask(*r.value(),
        reverse_name(l.family, std::span<const uint8_t>(l.addr.data(), l.family == 2 ? 4 : 16)), 12,
        512);
  }
  return 0;
}
