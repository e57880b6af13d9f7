#include "resolver/query/links.h"

#include <fmt/core.h>
#include <sys/socket.h>

#include <algorithm>

#include "resolver/text.h"
#include "wire/format.h"

namespace hg::resolver {

using text::shown;

namespace {

bool printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return b > 0x20 && b < 0x7F;
  });
}

constexpr std::string_view kUsage =
    "usage: link IFACE [--dns ADDR]... [--domain ZONE]... [--default-route yes|no], or link "
    "IFACE --revert";

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts)
    out += (out.empty() ? "" : ",") + p;
  return out.empty() ? std::string("-") : out;
}

}  // namespace

std::string LinkDomain::text() const {
  std::string name = zone.to_text();
  if (name.size() > 1) name.pop_back();  // "corp.example", the root stays "."
  return routing_only ? "~" + name : name;
}

std::string Link::text() const {
  std::vector<std::string> dns, doms;
  for (const Endpoint& e : servers)
    dns.push_back(e.to_string());
  for (const LinkDomain& d : domains)
    doms.push_back(d.text());
  return fmt::format("{} dns={} domains={} default-route={}", name, joined(dns), joined(doms),
                     default_route ? "yes" : "no");
}

bool valid_link_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > kMaxLinkNameLength) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == ':' || c == '@' || c == '+' || c == '-';
  });
}

Checked<LinkCommand> parse_link_command(std::span<const std::string_view> words) {
  using R = Checked<LinkCommand>;
  if (words.size() < 2) return R::failure(std::string(kUsage));
  const std::string_view iface = words[1];
  if (!valid_link_name(iface))
    return R::failure(fmt::format(
        "link '{}': not an interface name; expected 1 to {} characters of A-Z a-z 0-9 . _ : @ + -",
        shown(iface), kMaxLinkNameLength));
  const std::string who = fmt::format("link {}", iface);
  LinkCommand c;
  c.link.name = std::string(iface);
  if (words.size() == 3 && words[2] == "--revert") {
    c.revert = true;
    return c;
  }
  // Counted as given (before duplicates are merged), so the work done for a request is
  // bounded by the limits whatever it holds.
  std::size_t dns_words = 0, domain_words = 0;
  std::optional<bool> default_route;
  bool routes_root = false;
  for (std::size_t i = 2; i < words.size(); ++i) {
    const std::string_view w = words[i];
    const bool has_value = i + 1 < words.size();
    if (w == "--revert")
      return R::failure(who + ": --revert takes nothing else: link IFACE --revert");
    if (w != "--dns" && w != "--domain" && w != "--default-route")
      return R::failure(fmt::format(
          "{}: unexpected word '{}'; expected --dns ADDR, --domain ZONE, --default-route "
          "yes|no or --revert",
          who, shown(w)));
    if (!has_value) return R::failure(fmt::format("{}: {} needs a value; {}", who, w, kUsage));
    const std::string_view v = words[++i];
    if (w == "--dns") {
      if (++dns_words > kMaxLinkServers)
        return R::failure(fmt::format("{}: more than {} --dns servers", who, kMaxLinkServers));
      if (v.starts_with("tls://"))
        return R::failure(fmt::format(
            "{}: --dns '{}': DNS over TLS is not available for links; give ADDR[:PORT] (or "
            "configure it with --forward ZONE=tls://...)",
            who, shown(v)));
      auto e = printable(v) ? parse_endpoint(v, 53) : std::nullopt;
      if (!e || e->port() == 0)
        return R::failure(fmt::format(
            "{}: --dns '{}': expected a numeric IPv4 or IPv6 address with an optional port "
            "1-65535 (default 53), e.g. 10.8.0.1, 10.8.0.1:5353, 2001:db8::1 or "
            "[2001:db8::1]:5353",
            who, shown(v)));
      if (e->family() == AF_INET6 && e->v6().sin6_scope_id != 0)
        return R::failure(fmt::format(
            "{}: --dns '{}': link-local IPv6 servers with a %scope are not supported; give a "
            "global IPv6 or an IPv4 address",
            who, shown(v)));
      if (std::find(c.link.servers.begin(), c.link.servers.end(), *e) == c.link.servers.end())
        c.link.servers.push_back(*e);
    } else if (w == "--domain") {
      if (++domain_words > kMaxLinkDomains)
        return R::failure(fmt::format("{}: more than {} --domain zones", who, kMaxLinkDomains));
      LinkDomain d;
      std::string_view text = v;
      if (text.starts_with('~')) {
        d.routing_only = true;
        text.remove_prefix(1);
      }
      std::optional<wire::Name> name;
      if (!text.empty() && printable(text)) {
        if (auto n = wire::Name::from_text(text)) name = n.value();
      }
      if (!name)
        return R::failure(fmt::format(
            "{}: --domain '{}': not a domain name; expected ZONE, ~ZONE (routing only), . or ~. "
            "(the default route), e.g. corp.example or ~corp.example",
            who, shown(v)));
      d.zone = name->lowercased();
      // RFC 6761 §6.3: localhost names are the loopback addresses whatever a network says
      // (a forward zone of the configuration may still claim them; a link may not).
      static const wire::Name localhost = wire::Name::from_text("localhost").value();
      if (d.zone.is_subdomain_of(localhost))
        return R::failure(fmt::format(
            "{}: --domain '{}': localhost names are always the loopback addresses (RFC 6761 "
            "§6.3); a link cannot route them",
            who, shown(v)));
      if (d.zone.is_root()) routes_root = true;
      // The same zone twice: one entry, a search domain if either said so.
      auto same = std::find_if(c.link.domains.begin(), c.link.domains.end(),
                               [&](const LinkDomain& x) { return x.zone == d.zone; });
      if (same == c.link.domains.end()) {
        c.link.domains.push_back(d);
      } else {
        same->routing_only = same->routing_only && d.routing_only;
      }
    } else {
      if (default_route) return R::failure(who + ": --default-route is given twice");
      if (v != "yes" && v != "no")
        return R::failure(
            fmt::format("{}: --default-route '{}': expected yes or no", who, shown(v)));
      default_route = v == "yes";
    }
  }
  if (routes_root && default_route == false)
    return R::failure(who +
                      ": --domain . (or ~.) makes the link a default route; it contradicts "
                      "--default-route no");
  // As systemd-resolved: a link with a routing-only domain is not a default route unless
  // it routes the root or says so (a zone given both ways is a search domain).
  const bool routing_only =
      std::any_of(c.link.domains.begin(), c.link.domains.end(),
                  [](const LinkDomain& d) { return d.routing_only && !d.zone.is_root(); });
  c.link.default_route = default_route.value_or(routes_root || !routing_only);
  return c;
}

std::optional<std::string> LinkTable::apply(const LinkCommand& c, std::string& reply,
                                            bool& changed) {
  changed = false;
  const auto it = links_.find(c.link.name);
  if (c.revert || (c.link.servers.empty() && c.link.domains.empty())) {
    if (it == links_.end()) {
      reply = fmt::format("ok: link {} has no settings\n", c.link.name);
      return std::nullopt;
    }
    links_.erase(it);
    changed = true;
    reply = fmt::format("ok: link {} reverted\n", c.link.name);
    return std::nullopt;
  }
  if (it != links_.end()) {
    const Link& old = it->second;
    if (old.servers == c.link.servers && old.domains == c.link.domains &&
        old.default_route == c.link.default_route) {
      reply = fmt::format("ok: link {}\n", old.text());
      return std::nullopt;
    }
  } else if (links_.size() >= kMaxLinks) {
    return fmt::format(
        "link {}: {} links are set already, the most there may be; revert one first "
        "(hourglass-ctl links lists them)",
        c.link.name, kMaxLinks);
  }
  Link l = c.link;
  l.serial = next_serial_++;
  reply = fmt::format("ok: link {}\n", l.text());
  links_[l.name] = std::move(l);
  changed = true;
  return std::nullopt;
}

std::string LinkTable::text() const {
  std::string out;
  for (const auto& [name, l] : links_)
    out += l.text() + "\n";
  return out;
}

std::vector<ForwardZone> LinkTable::forward_zones(std::span<const ForwardZone> configured) const {
  std::vector<wire::Name> taken;
  for (const ForwardZone& f : configured)
    if (auto n = wire::Name::from_text(f.zone)) taken.push_back(n->lowercased());
  std::map<wire::Name, const Link*> best;  // canonical order: deterministic output
  for (const auto& [name, l] : links_) {
    if (l.servers.empty()) continue;
    for (const LinkDomain& d : l.domains) {
      if (d.zone.is_root()) continue;  // the default route, not a forward zone
      if (std::find(taken.begin(), taken.end(), d.zone) != taken.end()) continue;
      const Link*& slot = best[d.zone];
      if (slot == nullptr || slot->serial < l.serial) slot = &l;
    }
  }
  std::vector<ForwardZone> out;
  for (const auto& [zone, l] : best) {
    ForwardZone f;
    f.zone = zone.to_text();
    f.servers = l->servers;
    f.link = l->name;
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Endpoint> LinkTable::default_upstreams(std::span<const Endpoint> base) const {
  std::vector<Endpoint> out(base.begin(), base.end());
  std::vector<const Link*> order;
  for (const auto& [name, l] : links_)
    if (l.default_route) order.push_back(&l);
  std::sort(order.begin(), order.end(),
            [](const Link* a, const Link* b) { return a->serial < b->serial; });
  for (const Link* l : order)
    for (const Endpoint& e : l->servers)
      if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
  return out;
}

std::string LinkTable::default_route_note() const {
  std::string out;
  for (const auto& [name, l] : links_) {
    if (!l.default_route || l.servers.empty()) continue;
    std::string s;
    for (const Endpoint& e : l.servers)
      s += (s.empty() ? "" : " ") + e.to_string();
    out += fmt::format("; link {} adds {}", name, s);
  }
  return out;
}

}  // namespace hg::resolver
