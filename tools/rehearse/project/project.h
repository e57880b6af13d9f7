// hourglass-rehearse project: an authoritative server's queries → per resolver × question
// fetch series → fits (model.h) → the projected load at candidate TTLs, per question
// and in total, with a 95 % band. ProjectInput collects; project() computes; the two format
// functions print what run_project writes. docs/rehearsal.md, "project".
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tools/rehearse/project/model.h"
#include "tools/rehearse/trace/trace.h"
#include "wire/message.h"

namespace hg::rehearse {

/// What the trace says: per question ("name. TYPE") and resolver (address, or its prefix)
/// the fetch times, and per question the TTL its answers carry.
struct ProjectInput {
  int prefix4 = 32, prefix6 = 128;
  int64_t first_ns = 0, last_ns = 0;
  uint64_t queries = 0, responses = 0, undecodable = 0;
  uint64_t auth_messages = 0;   ///< dnstap AUTH_QUERY/AUTH_RESPONSE
  uint64_t other_messages = 0;  ///< dnstap messages of other types (skipped)
  std::map<std::string, std::map<std::string, std::vector<double>>> series;
  std::map<std::string, uint32_t> ttl_of;
  std::map<int64_t, uint64_t> per_minute;  ///< queries per minute since the first event

  /// One event, in time order (the first one fixes the time origin).
  void add(const TraceEvent& ev);
  int64_t base_ns();

 private:
  int64_t base_ = 0;
  wire::Message msg_;
};

struct NameProjection {
  std::string question;
  uint32_t ttl = 0;
  std::string ttl_from;  ///< "response" or "--ttl"
  uint64_t resolvers = 0;
  uint64_t fetches = 0;  ///< received
  double model_now = 0;  ///< the model's count at today's TTL
  std::vector<Rate> at;  ///< per candidate: queries over the trace's span, and its band
};

struct ProjectResult {
  std::vector<uint32_t> candidates;
  double span_s = 0;
  uint64_t resolvers = 0;
  uint64_t observed = 0;
  double model_now = 0;
  struct ClassShare {
    uint64_t series = 0, fetches = 0;
  };
  std::array<ClassShare, 4> classes{};  ///< by FetchClass
  uint32_t max_caches = 1;
  std::vector<Rate> totals;              ///< per candidate
  std::vector<NameProjection> names;     ///< by added queries at the last candidate, most first
  std::vector<std::string> missing_ttl;  ///< questions with no answer and no --ttl
};

ProjectResult project(ProjectInput& in, const std::vector<uint32_t>& candidates,
                      std::optional<uint32_t> default_ttl);
std::string format_project_table(const ProjectResult& r, const ProjectInput& in,
                                 std::optional<double> price, std::size_t top);
std::string format_project_json(const ProjectResult& r, const ProjectInput& in,
                                std::optional<double> price);

}  // namespace hg::rehearse
