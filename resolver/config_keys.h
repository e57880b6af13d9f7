// The table of settings: each setting of Config is defined once, in one row of keys()
// (config_keys.cc): its flag and config-file key name, the syntax of its value, its default,
// its help line, the group it is documented under, whether SIGHUP re-reads it and whether
// its value is a file path; with the function that stores a value (or says what is allowed)
// and the one that writes it back as TOML. Everything else is made from the rows:
//
//   the command line and --help            config_cli.cc (CLI11)
//   the config file, read and written      config_toml.cc (toml++; to_toml)
//   the man pages, completion, docs page   config_cli.cc's JSON -> packaging/gen-docs
//                                          (hourglassd(8), hourglass.toml(5),
//                                          docs/configuration.md)
//   the checks between values              config.cc (parse_config)
//
// Only the config files include this header (cmake/HgLayers.cmake); the rest of the daemon
// reads the Config record of resolver/config.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "resolver/config.h"

namespace hg::resolver::settings {

/// How a value is given: once (the last one wins), as a list (a repeatable flag, a TOML
/// array), or as a flag with no value (TOML true/false).
enum class Kind : uint8_t { Scalar, List, Flag };

/// The groups --help, the man page and docs/configuration.md list the settings under, in the
/// order of groups().
enum class Group : uint8_t {
  Serving,
  Upstreams,
  Tls,
  Dnssec,
  Cache,
  Routing,
  Filtering,
  Operations,
  Shadow,
  Fleet
};

struct GroupInfo {
  Group group;
  std::string_view title;  ///< the --help heading and the docs page's section
  std::string_view about;  ///< one sentence under the docs page's section title
  std::string_view page;   ///< the docs page that tells more, relative to docs/; may be empty
};
const std::vector<GroupInfo>& groups();
const GroupInfo& group_info(Group g);

/// What SIGHUP does for a setting.
enum class Reload : uint8_t {
  Restart,  ///< nothing: a new value takes a restart
  Key,      ///< the key is re-read from --config (unless the flag was given)
  File,     ///< the file the value names is re-read; a new path takes a restart
};

/// Stores one value in the Config; nullopt when stored, else what is allowed (the error line
/// adds where the value came from: "--flag "value": " or "FILE:LINE: key = "value": ").
using Setter = std::optional<std::string> (*)(Config&, std::string_view, const ParseOptions&);
/// Empties a list before the values of one source (the command line replaces the file's list).
using Clearer = void (*)(Config&);
/// The value as TOML text (a quoted string, an integer, true/false or an array). With
/// `all` false: nullopt when to_toml leaves the key out (unset, or meaningless without another
/// key); with `all` true: nullopt only when the setting has no value (an unset path).
using Shower = std::optional<std::string> (*)(const Config&, bool all);

/// Key::traits bits.
inline constexpr unsigned kPath = 1;        ///< the value is a file or socket path
inline constexpr unsigned kDescribed = 2;   ///< default_text describes, it is not a value
inline constexpr unsigned kReloadKey = 4;   ///< Reload::Key
inline constexpr unsigned kReloadFile = 8;  ///< Reload::File

struct Key {
  std::string_view name;  ///< the flag without its dashes, and the config-file key
  Kind kind;
  Group group;
  std::string_view type_name;  ///< the value's syntax in --help, e.g. "ADDR:PORT"
  /// The default as --help and the docs show it. Unless kDescribed, the setter takes it (a
  /// list's values separated by ", ") and gives the value of a default Config (tested).
  std::string_view default_text;
  std::string_view help;  ///< what it does; "repeatable", SIGHUP and the default are added
  Setter set;
  Clearer clear;
  Shower show;
  unsigned traits = 0;

  bool path() const { return (traits & kPath) != 0; }
  bool described() const { return (traits & kDescribed) != 0; }
  Reload reload() const {
    return (traits & kReloadKey)    ? Reload::Key
           : (traits & kReloadFile) ? Reload::File
                                    : Reload::Restart;
  }
};

/// Every setting, in the order of groups() (and within a group, the order --help lists).
const std::vector<Key>& keys();
const Key* find_key(std::string_view name);

/// The help line --help prints: help, then "; repeatable", the SIGHUP note and "(default X)".
std::string help_line(const Key& key);

/// Where a value came from, for the error line: `--key "value"` (no file) or
/// `FILE: key = "value"`.
std::string name_value(std::string_view source_file, std::string_view key, std::string_view value);

/// Applies the keys of the TOML file at `path` (config_toml.cc); every mistake of the file,
/// one line each, when it has any. `file_upstream`: the file set upstream.
std::optional<std::string> apply_toml(Config& c, const std::string& path,
                                      const ParseOptions& options, bool& file_upstream);

// --- value syntax shared by the setters (config_values.cc) ------------------------------------

/// Case-insensitive ASCII comparison (zone names, unit suffixes).
bool ieq(std::string_view a, std::string_view b);
/// RFC 1035 §2.3.4 limits of a zone in presentation form; nullopt when they hold.
std::optional<std::string> zone_syntax_error(std::string_view zone);
/// `s` as a TOML basic string, quotes included.
std::string toml_string(std::string_view s);
/// A byte count as the largest exact unit: "64MiB", "1536KiB", "1000".
std::string bytes_text(uint64_t bytes);

/// The setters that are more than a line (config_values.cc); each returns what is allowed.
std::optional<std::string> set_ttl(std::chrono::seconds& out, std::string_view v);
std::optional<std::string> set_timeout(std::chrono::milliseconds& out, std::string_view v);
std::optional<std::string> set_cache_size(Config& c, std::string_view v, const ParseOptions&);
std::optional<std::string> set_shadow_size(Config& c, std::string_view v, const ParseOptions&);
std::optional<std::string> add_upstream(Config& c, std::string_view v, const ParseOptions&);
std::optional<std::string> add_listen(Config& c, std::string_view v, const ParseOptions&);
std::optional<std::string> set_metrics(Config& c, std::string_view v, const ParseOptions&);
std::optional<std::string> set_dnssec(Config& c, std::string_view v, const ParseOptions&);
std::optional<std::string> add_ttl_cap(Config& c, std::string_view v, const ParseOptions& o);
std::optional<std::string> add_shadow_ttl(Config& c, std::string_view v, const ParseOptions& o);
std::optional<std::string> add_forward(Config& c, std::string_view v, const ParseOptions&);
std::optional<std::string> add_no_special_zone(Config& c, std::string_view v, const ParseOptions&);
std::optional<std::string> add_private_address(Config& c, std::string_view v, const ParseOptions&);
std::optional<std::string> set_client_share(Config& c, std::string_view v, const ParseOptions&);
std::optional<std::string> set_failing_zone_cap(Config& c, std::string_view v, const ParseOptions&);
std::optional<std::string> set_client_rate(Config& c, std::string_view v, const ParseOptions&);
std::optional<std::string> set_cache_file(Config& c, std::string_view v, const ParseOptions&);
std::optional<std::string> set_cache_save_interval(Config& c, std::string_view v,
                                                   const ParseOptions&);
std::optional<std::string> set_redis(Config& c, std::string_view v, const ParseOptions&);
std::optional<std::string> set_redis_password(Config& c, std::string_view v, const ParseOptions&);
std::optional<std::string> set_fleet_key(Config& c, std::string_view v, const ParseOptions&);
/// --user NAME: looked up now (an unknown user stops the start before anything is bound).
std::optional<std::string> resolve_user(Config& c, std::string_view v);

}  // namespace hg::resolver::settings
