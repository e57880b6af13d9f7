#include "tests/support/knot_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/bytes.h"
#include "tests/support/command.h"
#include "tests/support/ports.h"
#include "tests/wire/packet_builder.h"

namespace hg::test {

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whether `apex TYPE` is answered with at least one record (kdig +short prints one per line).
bool answers(uint16_t port, const std::string& apex, const char* type) {
  const auto r =
      run_command("kdig @127.0.0.1 -p " + std::to_string(port) +
                      " +norec +short +timeout=1 +retry=0 " + shell_quote(apex) + " " + type,
                  5, Stderr::Discard);
  return r.exit_code == 0 && !r.output.empty();
}

}  // namespace

std::unique_ptr<KnotServer> KnotServer::start(const std::vector<KnotPolicy>& policies,
                                              const std::vector<KnotZone>& zones,
                                              std::string& error) {
  if (run_command("sh -c 'command -v knotd && command -v kdig && command -v keymgr'", 5)
          .exit_code != 0) {
    error = "knotd, kdig or keymgr not installed (scripts/install-deps)";
    return nullptr;
  }
  std::unique_ptr<KnotServer> k(new KnotServer());
  if (k->dir_.path().empty()) {
    error = "mkdtemp failed";
    return nullptr;
  }
  const std::string& dir = k->dir_.path();
  k->port_ = free_port();
  std::string conf = "server:\n    rundir: \"" + dir + "\"\n    listen: 127.0.0.1@" +
                     std::to_string(k->port_) +
                     "\n    udp-workers: 1\n    tcp-workers: 1\n    background-workers: 1\n" +
                     "database:\n    storage: \"" + dir + "\"\n" + "control:\n    listen: \"" +
                     dir + "/knot.sock\"\n" + "log:\n  - target: stderr\n    any: warning\n";
  if (!policies.empty()) conf += "policy:\n";
  for (const auto& p : policies) {
    conf += "  - id: " + p.id + "\n";
    for (const auto& line : p.lines)
      conf += "    " + line + "\n";
  }
  conf += "zone:\n";
  for (const auto& z : zones) {
    conf += "  - domain: " + z.apex + "\n    file: \"" + dir + "/" + z.apex +
            ".zone\"\n    zonefile-sync: -1\n    journal-content: none\n";
    if (!z.policy.empty()) conf += "    dnssec-signing: on\n    dnssec-policy: " + z.policy + "\n";
    k->dir_.write(z.apex + ".zone", z.text);
  }
  k->dir_.write("knot.conf", conf);
  k->child_ = std::make_unique<Child>(
      std::vector<std::string>{"knotd", "-c", k->dir_.file("knot.conf")}, k->dir_.file("log"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{20};
  for (const auto& z : zones) {
    while (!answers(k->port_, z.apex, "SOA") ||
           (!z.policy.empty() && !answers(k->port_, z.apex, "DNSKEY"))) {
      if (std::chrono::steady_clock::now() > deadline || !k->child_->running()) {
        error = "knotd did not serve " + z.apex + " on port " + std::to_string(k->port_) + ": " +
                k->log();
        return nullptr;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{50});
    }
  }
  return k;
}

KnotServer::~KnotServer() = default;

std::string KnotServer::keymgr(const std::string& zone, const std::string& args) const {
  const auto r = run_command(
      "keymgr -c " + shell_quote(dir_.file("knot.conf")) + " " + shell_quote(zone) + " " + args, 20,
      Stderr::Discard);
  return r.exit_code == 0 ? r.output : std::string{};
}

std::optional<std::vector<uint8_t>> dns_query(uint16_t port, const std::string& name, uint16_t type,
                                              uint16_t flags) {
  using Bytes = std::vector<uint8_t>;
  using wire::test::PacketBuilder;
  const Bytes q =
      PacketBuilder().id(0x5151).flags(flags).question(name, type).opt(1232, 0x8000).build();
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  auto exchange = [&](int socktype) -> std::optional<Bytes> {
    const int fd = ::socket(AF_INET, socktype, 0);
    if (fd < 0) return std::nullopt;
    std::optional<Bytes> out;
    Bytes msg = q;
    if (socktype == SOCK_STREAM)
      msg.insert(msg.begin(),
                 {static_cast<uint8_t>(q.size() >> 8), static_cast<uint8_t>(q.size())});
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0 &&
        ::send(fd, msg.data(), msg.size(), 0) == static_cast<ssize_t>(msg.size())) {
      Bytes buf;
      Bytes chunk(65535);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{3};
      while (std::chrono::steady_clock::now() < deadline) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 500) != 1) continue;
        const ssize_t n = ::recv(fd, chunk.data(), chunk.size(), 0);
        if (n <= 0) break;
        buf.insert(buf.end(), chunk.begin(), chunk.begin() + n);
        if (socktype == SOCK_DGRAM) {
          out = buf;
          break;
        }
        if (buf.size() >= 2 &&
            buf.size() >= 2u + static_cast<std::size_t>(base::load_u16(&buf[0]))) {
          out = Bytes(buf.begin() + 2, buf.end());
          break;
        }
      }
    }
    ::close(fd);
    return out;
  };
  auto answer = exchange(SOCK_DGRAM);
  if (answer && answer->size() > 2 && ((*answer)[2] & 0x02) != 0) answer = exchange(SOCK_STREAM);
  return answer;
}

bool KnotServer::replace_zone(const std::string& apex, const std::string& text, uint32_t serial) {
  dir_.write(apex + ".zone", text);
  const auto r = run_command(
      "knotc -s " + shell_quote(dir_.file("knot.sock")) + " -b zone-reload " + shell_quote(apex),
      20);
  if (r.exit_code != 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{20};
  while (std::chrono::steady_clock::now() < deadline) {
    const auto got =
        run_command("kdig @127.0.0.1 -p " + std::to_string(port_) +
                        " +norec +short +timeout=1 +retry=0 " + shell_quote(apex) + " SOA",
                    5, Stderr::Discard);
    std::istringstream in(got.output);
    std::string mname, rname;
    uint64_t have = 0;
    if (got.exit_code == 0 && (in >> mname >> rname >> have) && have >= serial) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  return false;
}

KnotServer::DsRecords KnotServer::ds(const std::string& zone) const {
  DsRecords out;
  std::istringstream in(keymgr(zone, "ds"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string owner, type, hex, part;
    unsigned tag = 0, alg = 0, digest = 0;
    if (!(words >> owner >> type >> tag >> alg >> digest) || type != "DS") continue;
    while (words >> part)
      hex += part;
    std::vector<uint8_t> rdata{static_cast<uint8_t>(tag >> 8), static_cast<uint8_t>(tag),
                               static_cast<uint8_t>(alg), static_cast<uint8_t>(digest)};
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
      rdata.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    out.rdatas.push_back(std::move(rdata));
    out.zone_lines += line + "\n";
  }
  return out;
}

std::string KnotServer::log() const {
  return slurp(dir_.file("log"));
}

}  // namespace hg::test
