// The findings budget (spec section 10): at most 100 findings per rule (and severity) and
// 1,000 per file are listed; each rule that had more gets one summary finding saying how
// many were left out. Budget is ptn.core.errors.FindingBudget; ZipSink is ptn.zip.sink.Sink
// (the container's per-rule cap, whose summaries the file's budget then merges).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptn/error.hpp"

namespace ptn {

inline constexpr std::size_t kMaxFindingsPerRule = 100;
inline constexpr std::size_t kMaxFindingsPerFile = 1000;

namespace detail {

/// Per (rule, severity) counts in the order each key was first seen: few distinct rules,
/// so a linear search beats a map and allocates once per rule.
class RuleCounts {
 public:
  struct Entry {
    std::string rule;
    Severity severity;
    std::size_t count;
  };

  Entry& at(std::string_view rule, Severity severity) {
    for (Entry& e : entries_) {
      if (e.severity == severity && e.rule == rule) return e;
    }
    entries_.push_back(Entry{std::string(rule), severity, 0});
    return entries_.back();
  }
  std::size_t get(std::string_view rule, Severity severity) const {
    for (const Entry& e : entries_) {
      if (e.severity == severity && e.rule == rule) return e.count;
    }
    return 0;
  }
  const std::vector<Entry>& entries() const noexcept { return entries_; }

 private:
  std::vector<Entry> entries_;
};

}  // namespace detail

/// At most `per_rule` findings of each (rule, severity) and `total` in all; the rest are
/// counted, and summaries() gives one finding per rule that lost some. A summary from an
/// inner budget (more > 0) is merged into this one's count.
class Budget {
 public:
  explicit Budget(std::size_t per_rule = kMaxFindingsPerRule,
                  std::size_t total = kMaxFindingsPerFile)
      : per_rule_(per_rule), total_(total) {}

  /// Would the next finding of `rule` be listed? (Saves building one that is not.)
  bool room(std::string_view rule, Severity severity) const {
    return listed_.get(rule, severity) < per_rule_ && count_ < total_;
  }

  /// Count `n` findings of `rule` that are not listed.
  void skip(std::string_view rule, Severity severity, std::size_t n = 1) {
    left_out_.at(rule, severity).count += n;
  }

  /// Count `finding`; true if it is to be listed.
  bool admit(const Finding& finding) {
    if (finding.more == 0 && room(finding.rule, finding.severity)) {
      ++listed_.at(finding.rule, finding.severity).count;
      ++count_;
      return true;
    }
    skip(finding.rule, finding.severity, finding.more ? finding.more : 1);
    return false;
  }

  /// Keep `finding` if the budget lists it.
  void append(Finding finding) {
    if (admit(finding)) kept_.push_back(std::move(finding));
  }

  std::vector<Finding> summaries() const {
    std::vector<Finding> out;
    for (const auto& e : left_out_.entries()) {
      out.push_back(Finding{e.rule, e.severity, std::nullopt, std::nullopt,
                            std::to_string(e.count) +
                                " more findings of this rule are not listed (at most " +
                                std::to_string(per_rule_) + " per rule and " +
                                std::to_string(total_) + " per file are)",
                            e.count});
    }
    return out;
  }

  /// The kept findings, then the summaries.
  std::vector<Finding> finish() && {
    std::vector<Finding> out = std::move(kept_);
    for (auto& s : summaries()) out.push_back(std::move(s));
    return out;
  }

 private:
  std::size_t per_rule_;
  std::size_t total_;
  std::size_t count_ = 0;
  detail::RuleCounts listed_;
  detail::RuleCounts left_out_;
  std::vector<Finding> kept_;
};

namespace detail {

/// Where every stage of one zip read reports: findings in order, each rule capped at 100.
class ZipSink {
 public:
  /// Past its rule's cap a finding is only counted: `message` is called only when listed.
  template <class Message>
  void add(const char* rule, std::optional<std::string> member, Message&& message,
           Severity severity = Severity::Error) {
    const std::size_t count = ++counts_.at(rule, severity).count;
    if (count <= kMaxFindingsPerRule) {
      findings_.push_back(Finding{rule, severity, std::move(member), std::nullopt, message(), 0});
    }
  }

  /// The listed findings, then one summary per rule that went over its cap.
  std::vector<Finding> finish() && {
    std::vector<Finding> out = std::move(findings_);
    for (const auto& e : counts_.entries()) {
      if (e.count > kMaxFindingsPerRule) {
        const std::size_t more = e.count - kMaxFindingsPerRule;
        out.push_back(Finding{e.rule, e.severity, std::nullopt, std::nullopt,
                              std::to_string(more) + " more findings of this rule are not listed",
                              more});
      }
    }
    return out;
  }

 private:
  RuleCounts counts_;
  std::vector<Finding> findings_;
};

}  // namespace detail
}  // namespace ptn
