#include "resolver/query/hosts_table.h"

#include <fmt/core.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "base/hash.h"
#include "resolver/upstream/resolv_conf.h"

namespace hg::resolver {

namespace {

uint64_t fnv(std::span<const uint8_t> b) noexcept {
  const uint64_t h = base::fnv1a(b);
  return h ^ (h >> 29);  // the low bits pick the slot: fold the high ones in
}

// Length of the wire name starting at `p` (valid: the table wrote it).
std::size_t wire_len(const uint8_t* p) noexcept {
  std::size_t i = 0;
  while (p[i] != 0)
    i += 1u + p[i];
  return i + 1;
}

}  // namespace

// --- building -------------------------------------------------------------------------------

template <typename HashOf>
void HostsTable::index_insert(std::vector<uint32_t>& slots, std::size_t count, uint32_t id,
                              HashOf hash_of) {
  if ((count + 1) * 2 > slots.size()) {
    std::vector<uint32_t> old(std::max<std::size_t>(16, slots.size() * 2), 0);
    old.swap(slots);
    const std::size_t mask = slots.size() - 1;
    for (const uint32_t s : old) {
      if (s == 0) continue;
      std::size_t i = hash_of(s - 1) & mask;
      while (slots[i] != 0)
        i = (i + 1) & mask;
      slots[i] = s;
    }
  }
  const std::size_t mask = slots.size() - 1;
  std::size_t i = hash_of(id) & mask;
  while (slots[i] != 0)
    i = (i + 1) & mask;
  slots[i] = id + 1;
}

uint64_t HostsTable::name_hash(uint32_t entry) const noexcept {
  const uint8_t* p = names_.data() + entries_[entry].name;
  return fnv({p, wire_len(p)});
}

uint64_t HostsTable::addr_hash(uint32_t id) const noexcept {
  return fnv(address(id));
}

HostsTable::Builder::Builder(std::string path) : t_(new HostsTable()) {
  t_->path_ = std::move(path);
}
HostsTable::Builder::~Builder() = default;

void HostsTable::Builder::add(const HostsLineView& l) {
  HostsTable& t = *t_;
  const std::size_t alen = l.family == AF_INET ? 4 : 16;
  const std::span<const uint8_t> addr(l.addr.data(), alen);
  uint32_t aid = t.find_address(addr);
  if (aid == kNone) {
    aid = static_cast<uint32_t>(t.addrs_.size());
    Addr a{};
    std::copy_n(l.addr.begin(), alen, a.bytes.begin());
    a.len = static_cast<uint8_t>(alen);
    a.line = l.line;
    // The PTR of an address: the canonical name of the first line that gives it.
    a.ptr = static_cast<uint32_t>(t.ptr_names_.size());
    const auto canonical = l.name(0);
    t.ptr_names_.insert(t.ptr_names_.end(), canonical.begin(), canonical.end());
    t.addrs_.push_back(a);
    index_insert(t.addr_slots_, aid, aid, [&t](uint32_t id) { return t.addr_hash(id); });
  }
  std::array<uint8_t, wire::kMaxNameOctets> low;
  for (std::size_t i = 0; i < l.ends.size(); ++i) {
    const auto n = l.name(i);
    for (std::size_t k = 0; k < n.size(); ++k)
      low[k] = wire::ascii_lower(n[k]);
    const std::span<const uint8_t> key(low.data(), n.size());
    uint32_t e = t.find(key);
    if (e == kNone) {
      e = static_cast<uint32_t>(t.entries_.size());
      t.entries_.push_back(Entry{static_cast<uint32_t>(t.names_.size()), l.line, 0});
      t.names_.insert(t.names_.end(), key.begin(), key.end());
      index_insert(t.name_slots_, e, e, [&t](uint32_t id) { return t.name_hash(id); });
    }
    pairs_.push_back(Pair{e, aid, static_cast<uint32_t>(pairs_.size())});
  }
}

std::shared_ptr<const HostsTable> HostsTable::Builder::finish(std::vector<std::string>& errors) {
  HostsTable& t = *t_;
  // Each name's addresses once, in the order the file gave them: the first of each
  // (name, address) pair kept, then the pairs in file order per name.
  std::sort(pairs_.begin(), pairs_.end(), [](const Pair& a, const Pair& b) {
    return a.entry != b.entry ? a.entry < b.entry
                              : (a.addr != b.addr ? a.addr < b.addr : a.seq < b.seq);
  });
  pairs_.erase(std::unique(pairs_.begin(), pairs_.end(),
                           [](const Pair& a, const Pair& b) {
                             return a.entry == b.entry && a.addr == b.addr;
                           }),
               pairs_.end());
  std::sort(pairs_.begin(), pairs_.end(), [](const Pair& a, const Pair& b) {
    return a.entry != b.entry ? a.entry < b.entry : a.seq < b.seq;
  });
  std::unordered_set<std::string> tlds;
  for (std::size_t i = 0; i < pairs_.size();) {
    const uint32_t e = pairs_[i].entry;
    std::size_t j = i;
    while (j < pairs_.size() && pairs_[j].entry == e)
      ++j;
    std::size_t count = j - i;
    if (count > kMaxHostsAddressesPerName) {
      const uint8_t* p = t.names_.data() + t.entries_[e].name;
      auto name = wire::Name::from_wire({p, wire_len(p)});
      errors.push_back(fmt::format("{}: more than {} addresses; the rest are not served",
                                   name ? name->to_text() : "?", kMaxHostsAddressesPerName));
      count = kMaxHostsAddressesPerName;
    }
    if (count == 1) {
      t.entries_[e].addrs = pairs_[i].addr;
    } else {
      t.entries_[e].addrs = kMulti | static_cast<uint32_t>(t.multi_.size());
      t.multi_.push_back(static_cast<uint32_t>(count));
      for (std::size_t k = 0; k < count; ++k)
        t.multi_.push_back(pairs_[i + k].addr);
    }
    // The last label, for Routing's one-probe filter.
    const uint8_t* p = t.names_.data() + t.entries_[e].name;
    std::size_t last = 0;
    for (std::size_t k = 0; p[k] != 0; k += 1u + p[k])
      last = k;
    std::string label(reinterpret_cast<const char*>(p + last), p[last] + 2u);
    label.back() = '\0';
    tlds.insert(std::move(label));
    i = j;
  }
  t.tlds_.assign(tlds.begin(), tlds.end());
  std::vector<Pair>().swap(pairs_);
  t.names_.shrink_to_fit();
  t.entries_.shrink_to_fit();
  t.multi_.shrink_to_fit();
  t.addrs_.shrink_to_fit();
  t.ptr_names_.shrink_to_fit();
  return std::shared_ptr<const HostsTable>(std::move(t_));
}

std::shared_ptr<const HostsTable> HostsTable::parse(std::string path, std::string_view text,
                                                    std::vector<std::string>& errors) {
  Builder b(std::move(path));
  scan_hosts(
      text, [&](const HostsLineView& l) { b.add(l); },
      [&](std::string e) { errors.push_back(std::move(e)); });
  return b.finish(errors);
}

Checked<HostsTable::Read> HostsTable::read(const std::string& path) {
  auto text = read_small_file(path, kMaxHostsFileBytes);
  if (!text) return Checked<Read>::failure(text.error());
  Read r;
  r.table = parse(path, text.value().text, r.errors);
  // A file others may not read: its bad lines are said by number, never quoted.
  if (text.value().private_text) unquote_private_lines(r.errors);
  return r;
}

// --- lookups --------------------------------------------------------------------------------

std::size_t HostsTable::memory_bytes() const noexcept {
  return sizeof(*this) + path_.capacity() + names_.capacity() +
         entries_.capacity() * sizeof(Entry) + multi_.capacity() * 4 + name_slots_.capacity() * 4 +
         addrs_.capacity() * sizeof(Addr) + addr_slots_.capacity() * 4 + ptr_names_.capacity();
}

uint32_t HostsTable::find(std::span<const uint8_t> key) const noexcept {
  if (name_slots_.empty()) return kNone;
  const std::size_t mask = name_slots_.size() - 1;
  for (std::size_t i = fnv(key) & mask;; i = (i + 1) & mask) {
    const uint32_t s = name_slots_[i];
    if (s == 0) return kNone;
    const uint32_t o = entries_[s - 1].name;
    // Both are whole wire names: equal first key.size() bytes mean the same name.
    if (o + key.size() <= names_.size() &&
        std::memcmp(names_.data() + o, key.data(), key.size()) == 0)
      return s - 1;
  }
}

std::span<const uint32_t> HostsTable::address_ids(uint32_t entry) const noexcept {
  const uint32_t& a = entries_[entry].addrs;
  if ((a & kMulti) == 0) return {&a, 1};
  const std::size_t o = a & ~kMulti;
  return {multi_.data() + o + 1, multi_[o]};
}

uint32_t HostsTable::find_address(std::span<const uint8_t> addr) const noexcept {
  if (addr_slots_.empty()) return kNone;
  const std::size_t mask = addr_slots_.size() - 1;
  for (std::size_t i = fnv(addr) & mask;; i = (i + 1) & mask) {
    const uint32_t s = addr_slots_[i];
    if (s == 0) return kNone;
    const Addr& a = addrs_[s - 1];
    if (a.len == addr.size() && std::memcmp(a.bytes.data(), addr.data(), addr.size()) == 0)
      return s - 1;
  }
}

wire::Name HostsTable::ptr(uint32_t id) const noexcept {
  const uint8_t* p = ptr_names_.data() + addrs_[id].ptr;
  auto n = wire::Name::from_wire({p, wire_len(p)});
  return n ? n.value() : wire::Name();
}

}  // namespace hg::resolver
