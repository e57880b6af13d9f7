// The DNSSEC test hierarchy: zones knotd signs for real, each DS put into its parent after
// knotd made the child's keys, started once per test binary and shared by the dnssec/ tests
// that walk chains of trust and validate answers (chain_test.cc, answer_test.cc):
//
//   .              ECDSA P-256, NSEC        the trust anchor (its DS from keymgr)
//   test.          RSA/SHA-256, NSEC        host.ent.test. makes ent.test. an empty
//                                           non-terminal; a name 45 labels deep
//   signed.test.   Ed25519, NSEC3 opt-out   www; alias (CNAME www), alias2 (CNAME into deep),
//                                           out (CNAME into unsigned), *.wild, dn (DNAME to
//                                           deep); deep. (signed, DS); hidden. (no DS)
//   deep.signed.test.  ECDSA P-384, NSEC3   a; *.w
//   unsigned.test.     not signed; test. has no DS for it (NSEC proves it)
//   sha1.test.         RSA/SHA-1 (algorithm 5, not done here): DS present, so insecure
//   wrongds.test.      ECDSA P-256, but every DS in test. has its last digit changed: bogus
//   privalg.test.      ECDSA P-256, but its only DS in test. is of algorithm 253: insecure
//
// and the broken zones of tests/dnssec/broken_zones.h, which ldns-signzone signs (Ed25519,
// NSEC unless said) before knotd serves them as they are, each with its DS in test. and one
// name, x.CHILD.test. A:
//
//   expired.test.      every RRSIG expired days ago: bogus (EDE 7)
//   notyet.test.       every RRSIG's inception days ahead: bogus (EDE 8)
//   nokey.test.        no DNSKEY RRset in the zone: bogus (EDE 9)
//   stripped.test.     no RRSIG in the zone: bogus (EDE 10)
//   forged.test.       x.forged.test. A 6.6.6.6, changed after signing: bogus (EDE 6)
//   iter500.test.      NSEC3 with 500 iterations: its denials insecure (RFC 9276, EDE 27)
//   keytrap.test.      three DNSKEYs with one key tag, x's RRSIGs of that tag all bad: bogus,
//                      past the validation budget (EDE 0)
//
// Recursors over it on demand: an iterating Unbound (the upstream a validator sits behind),
// and two references with the root's DS as trust anchor — a validating Unbound, and Knot
// Resolver (kresd) forwarding to the iterating Unbound.
// The time is the machine's: knotd and ldns-signzone sign with it, so nothing depends on the
// date.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "dnssec/answer.h"
#include "dnssec/chain.h"
#include "tests/dnssec/broken_zones.h"
#include "tests/support/knot_server.h"
#include "tests/support/kresd_server.h"
#include "tests/support/unbound_server.h"
#include "wire/name.h"

namespace hg::test {

using Bytes = std::vector<uint8_t>;

inline int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline wire::Name name(const std::string& text) {
  return *wire::Name::from_text(text);
}

inline std::string soa(const std::string& apex, uint32_t serial) {
  const std::string in = apex == "." ? "." : "." + apex;  // "ns" + in: a name in the zone
  return "$TTL 3600\n" + apex + " SOA ns" + in + " hostmaster" + in + " " + std::to_string(serial) +
         " 3600 600 86400 300\n" + apex + " NS ns" + in + "\n" + "ns" + in + " A 127.0.0.1\n";
}

inline std::string long_name() {
  std::string n;
  for (int i = 44; i >= 0; --i)
    n += "l" + std::to_string(i) + ".";
  return n + "test.";
}

// Zone texts; `ds` holds the DS lines of each child once known (phase two).
inline std::string root_zone(uint32_t serial, const std::string& ds) {
  return soa(".", serial) + "test. NS ns.test.\nns.test. A 127.0.0.1\n" + ds;
}
inline std::string test_zone(uint32_t serial, const std::string& ds) {
  // 45 labels below test., all empty non-terminals but the last: a walk to it descends
  // through every one of them.
  std::string z =
      soa("test.", serial) + "host.ent.test. A 192.0.2.7\n" + long_name() + " A 192.0.2.8\n";
  std::vector<std::string> children{"signed", "unsigned", "sha1", "wrongds", "privalg"};
  children.insert(children.end(), broken_children().begin(), broken_children().end());
  for (const auto& child : children)
    z += child + ".test. NS ns." + child + ".test.\nns." + child + ".test. A 127.0.0.1\n";
  return z + ds;
}
inline std::string signed_zone(uint32_t serial, const std::string& ds) {
  return soa("signed.test.", serial) + "www.signed.test. A 192.0.2.1\n" +
         "alias.signed.test. CNAME www.signed.test.\n" +
         "alias2.signed.test. CNAME a.deep.signed.test.\n" +
         "out.signed.test. CNAME x.unsigned.test.\n" + "*.wild.signed.test. A 192.0.2.9\n" +
         "dn.signed.test. DNAME deep.signed.test.\n" +
         "deep.signed.test. NS ns.deep.signed.test.\nns.deep.signed.test. A 127.0.0.1\n" +
         "hidden.signed.test. NS ns.hidden.signed.test.\nns.hidden.signed.test. A 127.0.0.1\n" + ds;
}

/// Feeds `v` every DS and DNSKEY RRset it asks for, each asked of the resolver on
/// 127.0.0.1:`port` with RD, CD and DO (as hourglassd asks its upstreams), at most 200 of
/// them; each answer is also appended to `exchange` when given. True when `v` is done.
inline bool fetch_all(dnssec::AnswerValidation& v, uint16_t port,
                      std::vector<Bytes>* exchange = nullptr) {
  for (int i = 0; !v.done() && i < 200; ++i) {
    auto r = dns_query(port, v.need().name.to_text(), v.need().type, 0x0110);
    if (exchange != nullptr) exchange->push_back(r ? *r : Bytes{});
    v.feed(r ? *r : Bytes{});
  }
  return v.done();
}

struct Hierarchy {
  std::unique_ptr<KnotServer> knot;
  dnssec::Anchor anchor;                     ///< the root's DS, as keymgr gives them
  std::vector<std::string> root_ds_lines;    ///< the same in presentation form
  std::vector<std::string> zones;            ///< the apex of every zone knotd serves
  std::chrono::milliseconds took{0};         ///< how long start() took (keys, signing, knotd)
  std::chrono::milliseconds broken_took{0};  ///< of which making the broken zones

  /// The root's DS as the text of a trust anchor file (--trust-anchor).
  std::string root_ds_file() const {
    std::string file;
    for (const auto& line : root_ds_lines)
      file += line + "\n";
    return file;
  }

  /// The hierarchy, started on first use (bounded); nullptr with `error` when it cannot be.
  static const Hierarchy* get(std::string& error) {
    static std::string first_error;
    static const std::unique_ptr<Hierarchy> h = start(first_error);
    error = first_error;
    return h.get();
  }

  /// An Unbound recursor over the hierarchy: the iterator alone, or validating with the root
  /// anchor. Started on first use; nullptr with `error` when it cannot be.
  UnboundServer* unbound(bool validating, std::string& error) const {
    auto& u = validating ? validating_ : iterating_;
    if (!u)
      u = UnboundServer::start(knot->port(), zones,
                               validating ? root_ds_lines : std::vector<std::string>{}, error);
    return u.get();
  }

  /// kresd validating with the root anchor, forwarding to the iterating Unbound. Started on
  /// first use; nullptr with `error` when it cannot be.
  KresdServer* kresd(std::string& error) const {
    if (!kresd_) {
      UnboundServer* upstream = unbound(false, error);
      if (upstream != nullptr) kresd_ = KresdServer::start(upstream->port(), root_ds_lines, error);
    }
    return kresd_.get();
  }

 private:
  static std::unique_ptr<Hierarchy> start(std::string& error) {
    const auto started = std::chrono::steady_clock::now();
    auto h = std::make_unique<Hierarchy>();
    const auto soa_of = [](const std::string& apex) { return soa(apex, 1); };
    const std::vector<PresignedZone> broken = broken_zones(now_seconds(), soa_of, error);
    if (broken.empty()) return nullptr;
    h->broken_took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    const std::vector<KnotPolicy> policies{
        {"p256", {"algorithm: ecdsap256sha256"}},
        {"rsa", {"algorithm: rsasha256", "ksk-size: 2048", "zsk-size: 1024"}},
        {"ed3", {"algorithm: ed25519", "nsec3: on", "nsec3-opt-out: on"}},
        {"p384", {"algorithm: ecdsap384sha384", "nsec3: on"}},
        {"sha1", {"algorithm: rsasha1", "ksk-size: 2048", "zsk-size: 1024"}},
    };
    std::vector<KnotZone> zones{
        {".", root_zone(1, ""), "p256"},
        {"test.", test_zone(1, ""), "rsa"},
        {"signed.test.", signed_zone(1, ""), "ed3"},
        {"deep.signed.test.",
         soa("deep.signed.test.", 1) +
             "a.deep.signed.test. A 192.0.2.2\n*.w.deep.signed.test. A 192.0.2.10\n",
         "p384"},
        {"unsigned.test.", soa("unsigned.test.", 1) + "x.unsigned.test. A 192.0.2.3\n", ""},
        {"hidden.signed.test.", soa("hidden.signed.test.", 1), ""},
        {"sha1.test.", soa("sha1.test.", 1) + "x.sha1.test. A 192.0.2.4\n", "sha1"},
        {"wrongds.test.", soa("wrongds.test.", 1) + "x.wrongds.test. A 192.0.2.5\n", "p256"},
        {"privalg.test.", soa("privalg.test.", 1) + "x.privalg.test. A 192.0.2.6\n", "p256"},
    };
    for (const PresignedZone& z : broken)
      zones.push_back({z.apex, z.text, ""});  // no policy: served as signed
    auto k = KnotServer::start(policies, zones, error);
    if (!k) return nullptr;
    // Phase two: each parent gets its children's DS (one digest bit flipped for wrongds).
    auto ds_of = [&](const std::string& zone) { return k->ds(zone); };
    const KnotServer::DsRecords test_ds = ds_of("test.");
    // Every DS of wrongds.test. (keymgr gives one per digest type) with its last digit changed.
    std::string wrong;
    std::istringstream lines(ds_of("wrongds.test.").zone_lines);
    for (std::string line; std::getline(lines, line);) {
      const auto last = line.find_last_not_of(' ');
      if (last != std::string::npos) line[last] = line[last] == '0' ? '1' : '0';
      wrong += line + "\n";
    }
    std::string for_test =
        ds_of("signed.test.").zone_lines + ds_of("sha1.test.").zone_lines + wrong +
        // privalg.test.'s only DS names algorithm 253 (PRIVATEDNS): no validator does it.
        "privalg.test. DS 4242 253 2 " + std::string(64, 'A') + "\n";
    for (const PresignedZone& z : broken)
      for_test += z.ds;
    if (test_ds.rdatas.empty() || for_test.empty() ||
        !k->replace_zone(".", root_zone(2, test_ds.zone_lines), 2) ||
        !k->replace_zone("test.", test_zone(2, for_test), 2) ||
        !k->replace_zone("signed.test.", signed_zone(2, ds_of("deep.signed.test.").zone_lines),
                         2)) {
      error = "could not put the DS records into the parents: " + k->log();
      return nullptr;
    }
    const KnotServer::DsRecords root = ds_of(".");
    h->anchor = dnssec::Anchor{wire::Name(), root.rdatas};
    std::istringstream lines_of_root(root.zone_lines);
    for (std::string line; std::getline(lines_of_root, line);)
      h->root_ds_lines.push_back(line);
    for (const auto& z : zones)
      h->zones.push_back(z.apex);
    h->knot = std::move(k);
    h->took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    return h;
  }

  mutable std::unique_ptr<UnboundServer> iterating_;
  mutable std::unique_ptr<UnboundServer> validating_;
  mutable std::unique_ptr<KresdServer> kresd_;
};

}  // namespace hg::test
