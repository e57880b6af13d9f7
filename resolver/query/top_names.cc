#include "resolver/query/top_names.h"

#include <fmt/core.h>

#include <algorithm>

namespace hg::resolver {

void SpaceSaving::add(const wire::Name& name, std::size_t hash) {
  ++total_;
  for (std::size_t i = 0; i < used_; ++i) {
    if (hashes_[i] == hash && names_[i].identical(name)) {
      ++counts_[i];
      return;
    }
  }
  std::size_t i = used_;
  if (used_ < kCounters) {
    ++used_;
    counts_[i] = 0;
  } else {
    i = static_cast<std::size_t>(std::min_element(counts_.begin(), counts_.end()) -
                                 counts_.begin());
  }
  names_[i] = name;
  hashes_[i] = hash;
  errors_[i] = counts_[i];  // inherits the count it replaces as its error
  ++counts_[i];
}

std::vector<SpaceSaving::Item> SpaceSaving::top(std::size_t n) const {
  std::vector<Item> out;
  out.reserve(used_);
  for (std::size_t i = 0; i < used_; ++i)
    out.push_back(Item{names_[i], hashes_[i], counts_[i], errors_[i]});
  std::sort(out.begin(), out.end(), [](const Item& a, const Item& b) {
    return a.count != b.count ? a.count > b.count : a.name < b.name;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

void TopNames::on_query(const wire::Name& name) {
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) {
    skipped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  busiest_.add(name, name.hash());
}

void TopNames::on_upstream(const wire::Name& name) {
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) {
    skipped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  upstream_.add(name, name.hash());
}

std::string TopNames::text(std::size_t n) const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& it : busiest_.top(n))
    out += fmt::format("busiest {} {}\n", it.name.to_text(), it.count * kSampleEvery);
  for (const auto& it : upstream_.top(n))
    out += fmt::format("upstream {} {}\n", it.name.to_text(), it.count);
  out += fmt::format(
      "; estimates: busiest from 1 in {} queries ({} sampled), upstream from every upstream "
      "query ({}); {} counters each (space-saving); {} updates skipped while another worker "
      "held the lock\n",
      kSampleEvery, busiest_.total(), upstream_.total(), SpaceSaving::kCounters,
      skipped_.load(std::memory_order_relaxed));
  return out;
}

}  // namespace hg::resolver
