// Discover: walks a name's CNAME/DNAME chain hop by hop and asks each hop's authoritative
// servers directly (RD=0) what they publish: the hop's record and TTL, and per zone the SOA
// TTL, SOA MINIMUM and NS TTL. Fills a NamePlan's facts (hops, zones, problems); the
// timeline is computed afterwards by compute_timeline().
//
// Zones and their servers come from --auth (the same servers for every hop) or, without it,
// from a recursive resolver: the zone apex by asking SOA up the name's labels, the servers by
// the apex's NS names and their addresses. Every server of a zone is asked every question, so
// a half-done change (servers publishing different TTLs or data) shows up.
//
// Everything that goes wrong is a line in NamePlan::problems, never an exception: an
// unreachable server, a lame one (REFUSED, or an answer without AA), a chain loop, a chain
// longer than the limit, a name that does not exist (that one is planned as a new name).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/endpoint.h"
#include "tools/rehearse/plan/dns_client.h"
#include "tools/rehearse/plan/model.h"
#include "wire/name.h"
#include "wire/types.h"

namespace hg::rehearse {

struct DiscoverOptions {
  std::vector<base::Endpoint> auth;       ///< ask these for every zone when given
  std::vector<base::Endpoint> resolvers;  ///< find zones and NS through these otherwise
  uint16_t auth_port = 53;                ///< port of servers found through NS records
  wire::RRType type = wire::RRType::A;    ///< the address type at the end of the chain
  int max_hops = 16;
};

class Discoverer {
 public:
  Discoverer(DnsClient& client, DiscoverOptions options);
  NamePlan discover(const wire::Name& name);

 private:
  struct Zone {
    ZoneFacts facts;
    std::vector<base::Endpoint> servers;  // the authoritative ones
    std::vector<std::string> problems;
    bool usable = false;
  };
  const Zone& zone_for(const wire::Name& name, std::string& error);
  std::optional<wire::Name> find_apex(const wire::Name& name, std::string& error);
  std::vector<base::Endpoint> ns_servers(const wire::Name& apex, std::string& error);
  Zone load_zone(const wire::Name& apex, std::vector<base::Endpoint> candidates);

  DnsClient& client_;
  DiscoverOptions options_;
  std::map<std::string, Zone> zones_;  // by lowercased apex text
  Zone failed_zone_;
};

}  // namespace hg::rehearse
