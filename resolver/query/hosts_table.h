// HostsTable: one hosts file's names and addresses, compact enough for blocklists of
// millions of names (docs/local-names.md, "Hosts files").
//
// A blocklist of 100,000 names held as one std::string, vector and optional per name cost
// about 900 bytes a name; this table keeps
//   - one arena of the names' lowercased wire forms, back to back;
//   - per name 12 bytes: where its name starts, its line, and its address (or where its
//     list of addresses starts, for the few names with more than one);
//   - an open-addressing index of 4-byte slots, at most half full;
//   - each distinct address once, with the line that first gave it and the first canonical
//     name seen for it (PTR answers, as glibc's gethostbyaddr from /etc/hosts), itself
//     indexed the same way for reverse lookups.
// So a name costs its wire form plus about 25 bytes, and a blocklist (one address, 0.0.0.0)
// nothing more. The table is built once (HostsTable::Builder, on a thread that answers no
// queries: resolver/server.cc) and then only read; a re-read builds a new one beside it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "resolver/checked.h"
#include "resolver/routing_settings.h"
#include "wire/name.h"

namespace hg::resolver {

/// More addresses for one name are not served (the rest of its lines reported once): an
/// answer of 256 A records already needs TCP.
inline constexpr std::size_t kMaxHostsAddressesPerName = 256;

class HostsTable {
 public:
  static constexpr uint32_t kNone = 0xFFFFFFFF;

  /// Collects lines, then finish() makes the table. Memory while building: the table plus
  /// 12 bytes per (name, address) pair.
  class Builder {
   public:
    explicit Builder(std::string path);
    ~Builder();
    Builder(const Builder&) = delete;
    Builder& operator=(const Builder&) = delete;
    void add(const HostsLineView& line);
    /// The table; `errors` gets what was dropped ("NAME: more than 256 addresses ...").
    std::shared_ptr<const HostsTable> finish(std::vector<std::string>& errors);

   private:
    struct Pair {
      uint32_t entry, addr, seq;
    };
    std::unique_ptr<HostsTable> t_;
    std::vector<Pair> pairs_;
  };

  /// Parses hosts text (scan_hosts) straight into a table; `errors` gets "N: what" per
  /// skipped line.
  static std::shared_ptr<const HostsTable> parse(std::string path, std::string_view text,
                                                 std::vector<std::string>& errors);
  /// Reads (at most kMaxHostsFileBytes) and parses a file. Failure: why it was not read.
  struct Read {
    std::shared_ptr<const HostsTable> table;
    std::vector<std::string> errors;
  };
  static Checked<Read> read(const std::string& path);

  const std::string& path() const noexcept { return path_; }
  std::size_t names() const noexcept { return entries_.size(); }
  std::size_t addresses() const noexcept { return addrs_.size(); }
  /// Bytes the table holds (its vectors' capacities): what a name costs, without malloc's.
  std::size_t memory_bytes() const noexcept;

  /// The entry of a name given as its lowercased wire form, or kNone.
  uint32_t find(std::span<const uint8_t> lowered_wire) const noexcept;
  /// The line that first gave the entry's name.
  uint32_t line(uint32_t entry) const noexcept { return entries_[entry].line; }
  /// The entry's addresses (ids for address()), in the order the file gave them, each once.
  std::span<const uint32_t> address_ids(uint32_t entry) const noexcept;
  /// The address bytes (4 or 16) of an id.
  std::span<const uint8_t> address(uint32_t id) const noexcept {
    return {addrs_[id].bytes.data(), addrs_[id].len};
  }

  /// The address (4 or 16 bytes) as an id, or kNone when no line gives it.
  uint32_t find_address(std::span<const uint8_t> addr) const noexcept;
  /// The first canonical name given for an address (letter case as written), and its line.
  wire::Name ptr(uint32_t id) const noexcept;
  uint32_t address_line(uint32_t id) const noexcept { return addrs_[id].line; }

  /// The last labels the names end in, each as a wire name ("\3com\0"), once.
  const std::vector<std::string>& last_labels() const noexcept { return tlds_; }

 private:
  HostsTable() = default;
  struct Entry {
    uint32_t name;   ///< offset of the lowercased wire name in names_
    uint32_t line;   ///< first line that gave it
    uint32_t addrs;  ///< the address id, or (kMulti | offset in multi_: count, then ids)
  };
  struct Addr {
    std::array<uint8_t, 16> bytes;
    uint8_t len;    ///< 4 or 16
    uint32_t ptr;   ///< offset of the canonical name in ptr_names_
    uint32_t line;  ///< first line that gave it
  };
  static constexpr uint32_t kMulti = 0x80000000;

  uint64_t name_hash(uint32_t entry) const noexcept;
  uint64_t addr_hash(uint32_t id) const noexcept;
  /// Inserts entry/address ids into an index of slots (id + 1; 0 is empty), growing it to
  /// keep it at most half full.
  template <typename HashOf>
  static void index_insert(std::vector<uint32_t>& slots, std::size_t count, uint32_t id,
                           HashOf hash_of);

  std::string path_;
  std::vector<uint8_t> names_;
  std::vector<Entry> entries_;
  std::vector<uint32_t> multi_;
  std::vector<uint32_t> name_slots_;
  std::vector<Addr> addrs_;
  std::vector<uint32_t> addr_slots_;
  std::vector<uint8_t> ptr_names_;
  std::vector<std::string> tlds_;
};

}  // namespace hg::resolver
