// metadata-near-well-known (spec 9.3): names a runtime would ignore because they miss a
// well-known name by a typo or by case. As ptn.metadata.near: not well-known itself, and at
// most two single-character edits (insert, delete, replace) from a well-known name once
// both are lowercased; the warning names every well-known name at the least distance.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "ptn/error.hpp"
#include "ptn/metadata_values.hpp"

namespace ptn::detail {

inline constexpr std::size_t kNearMaxEdits = 2;

/// Levenshtein distance of `a` and `b`, or `limit + 1` when it exceeds `limit`.
inline std::size_t edit_distance(std::string_view a, std::string_view b,
                                 std::size_t limit = kNearMaxEdits) {
  const std::size_t gap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (gap > limit) return limit + 1;
  std::vector<std::size_t> previous(b.size() + 1), current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    std::size_t row_min = current[0];
    for (std::size_t j = 1; j <= b.size(); ++j) {
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1,
                             previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      row_min = std::min(row_min, current[j]);
    }
    if (row_min > limit) return limit + 1;
    std::swap(previous, current);
  }
  return std::min(previous[b.size()], limit + 1);
}

/// The well-known names `name` is near (the closest, schema order); empty if none.
inline std::vector<std::string> nearest_well_known(std::string_view name,
                                                   const SchemaTables& tables) {
  std::vector<std::string> out;
  for (const auto& spec : tables.well_known) {
    if (spec.name == name) return out;
  }
  std::string lowered(name);
  for (char& c : lowered) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  std::size_t best = kNearMaxEdits + 1;
  for (const auto& spec : tables.well_known) {
    const std::size_t d = edit_distance(lowered, spec.name);
    if (d < best) {
      best = d;
      out.clear();
    }
    if (d == best && d <= kNearMaxEdits) out.push_back(spec.name);
  }
  return out;
}

/// One metadata-near-well-known warning per name near a well-known one.
inline std::vector<Finding> near_warnings(const std::vector<std::string>& names,
                                          const SchemaTables& tables) {
  std::vector<Finding> out;
  for (const std::string& name : names) {
    const std::vector<std::string> nearest = nearest_well_known(name, tables);
    if (nearest.empty()) continue;
    std::string close;
    for (const std::string& k : nearest) close += (close.empty() ? "'" : " or '") + k + "'";
    out.push_back(Finding{"metadata-near-well-known", Severity::Warning,
                          std::string(kMetadataMember), pointer_to(name),
                          "'" + name + "' is not a well-known name but is close to " + close +
                              "; runtimes ignore it: rename it if it is a misspelling"});
  }
  return out;
}

}  // namespace ptn::detail
