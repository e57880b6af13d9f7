// The broken zones of the DNSSEC test hierarchy (tests/dnssec/hierarchy.h): zones signed with
// ldns-signzone (ldnsutils) and then served as they are by knotd, each broken in one way a
// signer of knotd's kind is made never to produce — signatures outside their validity window,
// a zone without its keys or without its signatures, a record changed after signing, NSEC3
// with far too many iterations, keys whose tags collide. Each zone has one Ed25519 key (a
// KSK that signs everything, as ldns-signzone does when given no ZSK), its DS put into test.
//
// Every time is the machine's, read when the hierarchy starts: the signatures' windows are
// placed relative to it, so that nothing depends on the date the tests run on.
#pragma once

#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/command.h"
#include "tests/support/temp_dir.h"

namespace hg::test {

/// A zone signed and broken beforehand: its apex, the zone file knotd serves, and its DS lines
/// for the parent.
struct PresignedZone {
  std::string apex;
  std::string text;
  std::string ds;
};

/// The children of test. that broken_zones() makes, each with one A record at x.CHILD.test.
inline const std::vector<std::string>& broken_children() {
  static const std::vector<std::string> names{"expired", "notyet",  "nokey",  "stripped",
                                              "forged",  "iter500", "keytrap"};
  return names;
}

/// The A record of x.CHILD.test. in each broken zone, as signed (192.0.2.21 and up, in the
/// order of broken_children()).
inline std::string broken_address(const std::string& child) {
  const auto& names = broken_children();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == child) return "192.0.2." + std::to_string(21 + i);
  return "";
}

/// What forged.test.'s x.forged.test. A says after signing, in place of its signed address.
inline constexpr const char* kForgedAddress = "6.6.6.6";
/// Keys of keytrap.test. that share one key tag (one signs, the others only collide), and
/// RRSIGs that carry the tag and verify with none of them, on x.keytrap.test. A.
inline constexpr int kKeytrapKeys = 3;
inline constexpr int kKeytrapSignatures = 8;

namespace broken_detail {

inline constexpr int64_t kDay = 86400;

inline std::string base64(const uint8_t* data, std::size_t size) {
  std::string out(4 * ((size + 2) / 3) + 1, '\0');
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(size));
  out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return out;
}

// RFC 4034 Appendix B, written here rather than taken from dnssec/: the tags must collide for
// ldns and every validator, not for our own arithmetic only.
inline uint16_t rfc4034_key_tag(const std::vector<uint8_t>& rdata) {
  uint32_t ac = 0;
  for (std::size_t i = 0; i < rdata.size(); ++i)
    ac += (i & 1) != 0 ? rdata[i] : static_cast<uint32_t>(rdata[i]) << 8;
  ac += (ac >> 16) & 0xffff;
  return static_cast<uint16_t>(ac & 0xffff);
}

// The whitespace-separated fields of a zone file line.
inline std::vector<std::string> fields(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string f; in >> f;)
    out.push_back(f);
  return out;
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ldns-signzone's output line by line, each line given to `edit`, which returns what to keep
// (nothing to drop it, several lines to add some).
template <typename Edit>
std::string edit_lines(const std::string& zone, Edit edit) {
  std::istringstream in(zone);
  std::string out;
  for (std::string line; std::getline(in, line);)
    out += edit(line);
  return out;
}

class Maker {
 public:
  Maker(int64_t now, std::string& error) : now_(now), error_(error) {}

  // A new Ed25519 KSK for `apex` made by ldns-keygen in the work directory: its base name
  // (K<apex>+015+<tag>), its DS line in `ds`.
  std::string keygen(const std::string& apex, std::string& ds) {
    const auto r = in_dir("ldns-keygen -a ED25519 -k -r /dev/urandom " + shell_quote(apex));
    std::string base = r.exit_code == 0 ? r.output : "";
    while (!base.empty() && (base.back() == '\n' || base.back() == ' '))
      base.pop_back();
    ds = base.empty() ? "" : slurp(dir_.file(base + ".ds"));
    if (ds.empty()) fail("ldns-keygen " + apex + ": " + r.output);
    if (!ds.empty() && ds.back() != '\n') ds += "\n";
    return base;
  }

  // `text` for `apex` signed by ldns-signzone with the keys `bases`, its signatures valid from
  // now + `from` to now + `until` (seconds), with `options` (NSEC3, keys left out...).
  std::string sign(const std::string& apex, const std::string& text, const std::string& bases,
                   int64_t from, int64_t until, const std::string& options = "") {
    dir_.write(apex + "zone", text);
    const auto r = in_dir("ldns-signzone -i " + std::to_string(now_ + from) + " -e " +
                              std::to_string(now_ + until) + " " + options + " -o " +
                              shell_quote(apex) + " -f " + shell_quote(apex + "signed") + " " +
                              shell_quote(apex + "zone") + " " + bases,
                          true);
    const std::string signed_text = r.exit_code == 0 ? slurp(dir_.file(apex + "signed")) : "";
    if (signed_text.find("RRSIG") == std::string::npos)
      fail("ldns-signzone " + apex + ": " + r.output);
    return signed_text;
  }

  // kKeytrapKeys Ed25519 KSKs of `apex` whose key tags are all the same, drawn by OpenSSL until
  // that many collide (about 3,000 keys for three; bounded): their base names, files written
  // as ldns-keygen writes them, the first one's DS in `ds`.
  std::vector<std::string> colliding_keys(const std::string& apex, std::string& ds) {
    struct Key {
      std::array<uint8_t, 32> priv{};
      std::vector<uint8_t> rdata;
    };
    std::map<uint16_t, std::vector<Key>> by_tag;
    std::vector<Key>* found = nullptr;
    for (int i = 0; i < 200000 && found == nullptr; ++i) {
      EVP_PKEY* k = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
      if (k == nullptr) break;
      Key key;
      std::array<uint8_t, 32> pub{};
      std::size_t priv_len = key.priv.size(), pub_len = pub.size();
      const bool ok = EVP_PKEY_get_raw_private_key(k, key.priv.data(), &priv_len) == 1 &&
                      EVP_PKEY_get_raw_public_key(k, pub.data(), &pub_len) == 1;
      EVP_PKEY_free(k);
      if (!ok) break;
      key.rdata = {1, 1, 3, 15};  // flags 257 (zone key, SEP), protocol 3, Ed25519
      key.rdata.insert(key.rdata.end(), pub.begin(), pub.end());
      auto& same = by_tag[rfc4034_key_tag(key.rdata)];
      same.push_back(std::move(key));
      if (same.size() == kKeytrapKeys) found = &same;
    }
    if (found == nullptr) {
      fail("no key tags collided");
      return {};
    }
    std::vector<std::string> bases;
    for (const Key& key : *found) {
      const uint16_t tag = rfc4034_key_tag(key.rdata);
      // The same tag for each: the files are told apart by a suffix.
      const std::string base =
          "K" + apex + "+015+" + std::to_string(tag) + "-" + std::to_string(bases.size());
      dir_.write(base + ".key", apex + " IN DNSKEY 257 3 15 " +
                                    base64(key.rdata.data() + 4, key.rdata.size() - 4) + "\n");
      dir_.write(base + ".private",
                 "Private-key-format: v1.2\nAlgorithm: 15 (ED25519)\n"
                 "PrivateKey: " +
                     base64(key.priv.data(), key.priv.size()) + "\n");
      bases.push_back(base);
    }
    const auto r = in_dir("ldns-key2ds -n -2 " + shell_quote(bases[0] + ".key"));
    ds = r.exit_code == 0 ? r.output : "";
    if (ds.find(" DS") == std::string::npos && ds.find("\tDS") == std::string::npos)
      fail("ldns-key2ds: " + r.output);
    if (!ds.empty() && ds.back() != '\n') ds += "\n";
    return bases;
  }

  // The DNSKEY line of a key the zone file should carry besides its signer's.
  std::string key_line(const std::string& base) { return slurp(dir_.file(base + ".key")); }

  bool failed() const { return failed_; }

 private:
  // `cmd` run by the shell in the work directory; its stderr only when `merge` (the output
  // of ldns-keygen and ldns-key2ds is read, and warnings would spoil it).
  CommandResult in_dir(const std::string& cmd, bool merge = false) {
    return run_command("sh -c " + shell_quote("cd " + shell_quote(dir_.path()) + " && " + cmd), 30,
                       merge ? Stderr::Merge : Stderr::Discard);
  }
  void fail(const std::string& why) {
    if (!failed_) error_ = why;
    failed_ = true;
  }

  int64_t now_;
  std::string& error_;
  bool failed_ = false;
  TempDir dir_{"hg-ldns"};
};

}  // namespace broken_detail

/// The broken zones under test., made with the machine's time `now` (seconds since 1970), each
/// holding the SOA, NS and glue `soa_of(apex)` gives and x.CHILD.test. A:
///
///   expired.test.   every RRSIG expired 10 days ago (valid from 30 days ago)
///   notyet.test.    every RRSIG valid only from 10 days ahead
///   nokey.test.     signed, DS in test., but its DNSKEY RRset left out of the zone
///   stripped.test.  signed, DS in test., every RRSIG taken out (the DNSKEYs stay)
///   forged.test.    x.forged.test. A changed to 6.6.6.6 after signing
///   iter500.test.   NSEC3 with 500 iterations (RFC 9276 says 0; validators give up above 150)
///   keytrap.test.   three DNSKEYs sharing one key tag (the first signs everything else), and
///                   x.keytrap.test. A carrying eight RRSIGs of that tag that verify with none
///
/// Empty, with `error` saying why, when ldnsutils is missing or a step fails.
template <typename SoaOf>
std::vector<PresignedZone> broken_zones(int64_t now, SoaOf soa_of, std::string& error) {
  using broken_detail::kDay;
  if (run_command("sh -c 'command -v ldns-keygen && command -v ldns-signzone && "
                  "command -v ldns-key2ds'",
                  5)
          .exit_code != 0) {
    error =
        "ldns-keygen, ldns-signzone or ldns-key2ds not installed (scripts/install-deps: "
        "ldnsutils)";
    return {};
  }
  broken_detail::Maker m(now, error);
  std::vector<PresignedZone> out;
  for (const std::string& child : broken_children()) {
    const std::string apex = child + ".test.";
    const std::string text = soa_of(apex) + "x." + apex + " A " + broken_address(child) + "\n";
    PresignedZone z{apex, "", ""};
    if (child == "keytrap") {
      const std::vector<std::string> keys = m.colliding_keys(apex, z.ds);
      if (keys.empty()) return {};
      // Every key in the zone file, the signer's too: ldns-signzone looks for its key's DNSKEY
      // in the zone by key tag, finds one of the others, and would add none.
      std::string with_keys = text;
      for (const std::string& key : keys)
        with_keys += m.key_line(key);
      const std::string signed_text = m.sign(apex, with_keys, keys[0], -kDay, 30 * kDay);
      // x.keytrap.test.'s one good RRSIG replaced by kKeytrapSignatures of the same tag that
      // verify with no key: each has one other base64 letter near the start of its signature.
      z.text = broken_detail::edit_lines(signed_text, [&](const std::string& line) {
        const auto f = broken_detail::fields(line);
        if (f.size() < 13 || f[0] != "x." + apex || f[3] != "RRSIG" || f[4] != "A")
          return line + "\n";
        std::string bad;
        const std::size_t sig_at = line.rfind(f.back());
        for (int i = 0; i < kKeytrapSignatures; ++i) {
          std::string l = line;
          char& c = l[sig_at + static_cast<std::size_t>(i)];
          c = c == 'A' ? 'B' : 'A';
          bad += l + "\n";
        }
        return bad;
      });
    } else {
      const std::string key = m.keygen(apex, z.ds);
      if (key.empty()) return {};
      if (child == "expired") {
        z.text = m.sign(apex, text, key, -30 * kDay, -10 * kDay);
      } else if (child == "notyet") {
        z.text = m.sign(apex, text, key, 10 * kDay, 40 * kDay);
      } else if (child == "nokey") {
        z.text = m.sign(apex, text, key, -kDay, 30 * kDay, "-d");  // -d: no DNSKEY added
      } else if (child == "iter500") {
        z.text = m.sign(apex, text, key, -kDay, 30 * kDay, "-n -t 500 -s cafe");
      } else {
        const std::string signed_text = m.sign(apex, text, key, -kDay, 30 * kDay);
        z.text = broken_detail::edit_lines(signed_text, [&](const std::string& line) {
          const auto f = broken_detail::fields(line);
          if (child == "stripped" && f.size() > 3 && f[3] == "RRSIG") return std::string{};
          if (child == "forged" && f.size() == 5 && f[0] == "x." + apex && f[3] == "A")
            return f[0] + " " + f[1] + " " + f[2] + " A " + kForgedAddress + "\n";
          return line + "\n";
        });
      }
    }
    if (m.failed()) return {};
    out.push_back(std::move(z));
  }
  return out;
}

}  // namespace hg::test
