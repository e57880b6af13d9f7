// parse_config(): the command line (config_cli.h) over the --config file (config_toml.cc),
// then the checks between values that no single setter can make (a minimum above its maximum,
// a tls:// upstream without a name to check, a forwarding loop), then the upstream file.
// The settings themselves, their syntax and defaults are the table of config_keys.h.
//
// Errors are one line naming the flag or key, the value given, and what is allowed
// (docs/architecture.md §7), returned, never thrown.
#include "resolver/config.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <algorithm>

#include "resolver/config_cli.h"
#include "resolver/text.h"

namespace hg::resolver {
using settings::Cli;
using settings::Key;
using settings::Kind;
using settings::name_value;
using text::quote;

// --- forwarding loops ------------------------------------------------------------------------

std::optional<ForwardingLoop> find_forwarding_loop(std::span<const Endpoint> listen,
                                                   std::span<const Endpoint> upstreams,
                                                   std::span<const Endpoint> local_addresses) {
  auto is_local = [&](const Endpoint& e) {
    if (e.is_loopback() || e.is_unspecified()) return true;
    return std::any_of(local_addresses.begin(), local_addresses.end(),
                       [&](const Endpoint& l) { return l.same_ip(e); });
  };
  auto is_v4 = [](const Endpoint& e) {
    return e.family() == AF_INET ||
           (e.family() == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&e.v6().sin6_addr));
  };
  for (const Endpoint& u : upstreams) {
    for (const Endpoint& l : listen) {
      if (u.port() != l.port()) continue;
      bool loop = false;
      if (l.is_unspecified()) {
        // 0.0.0.0 receives on every local IPv4 address; :: on every address of both
        // families (Linux dual-stack default, net.ipv6.bindv6only=0).
        loop = is_local(u) && (l.family() == AF_INET6 || is_v4(u));
      } else if (u.is_unspecified()) {
        // Sending to 0.0.0.0 or :: reaches this host.
        loop = is_local(l);
      } else {
        loop = u.same_ip(l);
      }
      if (loop) return ForwardingLoop{u, l};
    }
  }
  return std::nullopt;
}

std::vector<Endpoint> local_interface_addresses() {
  std::vector<Endpoint> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    socklen_t len = i->ifa_addr->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    if (auto e = Endpoint::from_sockaddr(i->ifa_addr, len)) {
      e->set_port(0);
      out.push_back(*e);
    }
  }
  freeifaddrs(list);
  return out;
}

std::string describe(const ForwardingLoop& loop, std::string_view upstream_source) {
  return "forwarding loop: upstream " + loop.upstream.to_string() + " (from " +
         std::string(upstream_source) + ") is our own listen address " + loop.listen.to_string() +
         ", so every query would come back to us; point --upstream-file at the real servers "
         "(e.g. /run/systemd/resolve/resolv.conf or a file with the network's nameservers) "
         "or give --upstream ADDR[:PORT]";
}

// --- Config ----------------------------------------------------------------------------------

std::vector<Endpoint> Config::default_listen() {
  return {*parse_endpoint("127.0.0.1:53", 53)};
}

std::vector<Cidr> Config::default_allow() {
  return {Cidr::parse("127.0.0.0/8").value(), Cidr::parse("::1/128").value()};
}

std::variant<Config, ConfigExit> parse_config(int argc, const char* const* argv,
                                              const ParseOptions& options) {
  Cli cli;
  try {
    cli.app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::string help = settings::render_help(cli.app);
    while (!help.empty() && help.back() == '\n')
      help.pop_back();
    return ConfigExit{0, help};
  } catch (const CLI::CallForVersion& e) {
    return ConfigExit{0, e.what()};
  } catch (const CLI::ParseError& e) {
    return ConfigExit{2, std::string(e.what()) + "; run with --help for the flags"};
  }

  Config c;
  c.check_config = cli.check_config;
  bool file_upstream = false;
  // --user first: files of that user, read from the config file's keys on, are trusted.
  if (cli.options["user"]->count() > 0) {
    if (auto why = settings::resolve_user(c, cli.scalars["user"]))
      return ConfigExit{2, name_value("", "user", cli.scalars["user"]) + ": " + *why};
  }
  if (!cli.config_path.empty()) {
    c.config_file = cli.config_path;
    if (auto err = settings::apply_toml(c, cli.config_path, options, file_upstream)) {
      return ConfigExit{2, *err};
    }
  } else if (!cli.options.empty() && cli.app.get_option("--config")->count() > 0) {
    return ConfigExit{2, "--config \"\": expected the path of a TOML file"};
  }

  // The command line replaces whatever the file said, list keys included.
  for (const Key& k : settings::keys()) {
    CLI::Option* o = cli.options[std::string(k.name)];
    if (o->count() == 0) continue;
    if (k.kind == Kind::Flag) {
      const std::string& v = cli.flags[std::string(k.name)];
      if (auto allowed = k.set(c, v, options)) {
        return ConfigExit{2, "--" + std::string(k.name) + "=" + quote(v) + ": " + *allowed};
      }
      continue;
    }
    std::vector<std::string> values;
    if (k.kind == Kind::Scalar) {
      values.push_back(cli.scalars[std::string(k.name)]);
    } else {
      values = cli.lists[std::string(k.name)];
    }
    if (k.clear) k.clear(c);
    for (const std::string& v : values) {
      if (auto allowed = k.set(c, v, options)) {
        return ConfigExit{2, name_value("", k.name, v) + ": " + *allowed};
      }
    }
    if (k.name == "shadow-ttl") c.shadow_ttls_from_cli = true;
    if (k.name == "forward") c.forward_from_cli = true;
    if (k.name == "hosts-file") c.hosts_files_from_cli = true;
  }
  c.dnstap_from_cli = cli.options["dnstap"]->count() > 0;
  c.dnstap_identity_from_cli = cli.options["dnstap-identity"]->count() > 0;
  // An explicit --upstream-file beats upstreams from the config file.
  if (cli.options["upstream-file"]->count() > 0 && cli.options["upstream"]->count() == 0 &&
      file_upstream) {
    c.upstreams.clear();
  }

  // Relations between values.
  auto where = [&](std::string_view key, const std::string& value) {
    bool from_cli = cli.options[std::string(key)]->count() > 0;
    if (from_cli || c.config_file.empty()) return "--" + std::string(key) + " " + value;
    return std::string(key) + " = " + value + " (" + c.config_file + ")";
  };
  if (c.cache_min_ttl > c.cache_max_ttl) {
    return ConfigExit{2, where("cache-min-ttl", std::to_string(c.cache_min_ttl.count())) +
                             " is above " +
                             where("cache-max-ttl", std::to_string(c.cache_max_ttl.count())) +
                             ": the minimum TTL must not exceed the maximum"};
  }
  if (c.client_timeout > c.upstream_timeout) {
    return ConfigExit{2, where("client-timeout", std::to_string(c.client_timeout.count())) +
                             " is above " +
                             where("upstream-timeout", std::to_string(c.upstream_timeout.count())) +
                             ": stale data must be served before the SERVFAIL deadline"};
  }
  if (c.listen.empty()) {
    return ConfigExit{2, "listen = []: expected at least one address to serve DNS on"};
  }
  // RFC 8310 §5: a strict server needs an authentication name or a key pin.
  for (const ForwardZone& f : c.forward_zones)
    for (const TlsTarget& t : f.tls)
      if (t.auth_name.empty() && c.tls_pins.empty())
        return ConfigExit{2, "--forward " + f.zone + ": " + to_string(t) +
                                 " has no #AUTH-NAME to check its certificate against; add "
                                 "#NAME (the name in its certificate) or give --tls-pin"};
  for (const TlsTarget& t : c.tls_upstreams)
    if (t.auth_name.empty() && c.tls_pins.empty())
      return ConfigExit{2, "--upstream " + to_string(t) +
                               ": no #AUTH-NAME to check its certificate against; add #NAME "
                               "(the name in its certificate) or give --tls-pin sha256/BASE64"};
  // AD is worth what the path it came over is worth: only a server whose certificate name we
  // check may be trusted with it (RFC 4035 §3.2.3, RFC 6840 §5.7).
  for (const Endpoint& e : c.trust_ad) {
    bool authenticated = false;
    for (const TlsTarget& t : c.tls_upstreams)
      authenticated = authenticated || (t.endpoint == e && !t.auth_name.empty());
    for (const ForwardZone& f : c.forward_zones)
      for (const TlsTarget& t : f.tls)
        authenticated = authenticated || (t.endpoint == e && !t.auth_name.empty());
    if (!authenticated)
      return ConfigExit{2, "--trust-ad " + e.to_string() +
                               ": not a tls:// upstream with a certificate name "
                               "(tls://ADDR#NAME in --upstream or --forward); the AD bit of any "
                               "other upstream can be set by anyone on the path"};
  }
  if (c.dnssec != Config::Dnssec::Off && !c.trust_ad.empty()) {
    if (c.dnssec_given)
      return ConfigExit{2, where("trust-ad", c.trust_ad.front().to_string()) +
                               " with --dnssec validate or require: the AD bit is then this "
                               "resolver's own verdict, not an upstream's; give one or the other"};
    // Trusting an upstream's validation is a choice not to validate here.
    c.dnssec = Config::Dnssec::Off;
  }
  if (!c.redis.user.empty() && c.redis.password.empty()) {
    return ConfigExit{2, where("redis-user", c.redis.user) +
                             ": an ACL user needs its password; give --redis-password-file"};
  }
  if (!c.redis.enabled() && (!c.redis.key_file.empty() || !c.redis.user.empty())) {
    return ConfigExit{2,
                      std::string(c.redis.key_file.empty() ? "--redis-user" : "--fleet-key-file") +
                          " is for the fleet; give --redis ADDR:PORT|unix:PATH too"};
  }

  std::string upstream_source = "--upstream";
  if (c.upstreams.empty()) {
    auto rc = read_resolv_conf(c.upstream_file);
    if (!rc) {
      return ConfigExit{2, "--upstream-file " + quote(c.upstream_file) + ": " + rc.error() +
                               "; give --upstream ADDR[:PORT] or a readable resolv.conf-style "
                               "file with nameserver lines"};
    }
    if (rc->nameservers.empty()) {
      return ConfigExit{2, "--upstream-file " + quote(c.upstream_file) + ": " +
                               no_nameserver_reason(rc.value(), c.upstream_file) +
                               "; give --upstream ADDR[:PORT] or a file with lines like "
                               "\"nameserver 192.0.2.1\""};
    }
    c.upstreams = std::move(rc->nameservers);
    c.upstreams_from_file = true;
    c.warnings.insert(c.warnings.end(), rc->warnings.begin(), rc->warnings.end());
    upstream_source = c.upstream_file;
  } else if (file_upstream && cli.options["upstream"]->count() == 0) {
    upstream_source = c.config_file;
  }

  std::vector<Endpoint> locals =
      options.local_addresses ? *options.local_addresses : local_interface_addresses();
  if (auto loop = find_forwarding_loop(c.listen, c.upstreams, locals)) {
    return ConfigExit{2, describe(*loop, upstream_source)};
  }
  for (const ForwardZone& f : c.forward_zones) {
    if (auto loop = find_forwarding_loop(c.listen, f.servers, locals))
      return ConfigExit{2, describe(*loop, "--forward " + f.zone)};
  }
  return c;
}

}  // namespace hg::resolver
