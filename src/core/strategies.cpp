// The strategy registry's look-ups (its rows are tally/strategy.hpp's kStrategies).
#include "tally/strategy.hpp"

#include <iterator>
#include <string>

#include "tally/error.hpp"

namespace tally {
namespace {

constexpr bool in_enum_order() {
  for (std::size_t i = 0; i < std::size(kStrategies); ++i)
    if (static_cast<std::size_t>(kStrategies[i].which) != i) return false;
  return true;
}
static_assert(in_enum_order(), "kStrategies: one row per strategy, in the enum's order");
static_assert(std::size(kStrategies) == static_cast<std::size_t>(strategy::partitioned) + 1,
              "kStrategies: a row for every strategy (partitioned is the enum's last)");

}  // namespace

const std::vector<strategy_info>& strategies() {
  static const std::vector<strategy_info> rows(std::begin(kStrategies), std::end(kStrategies));
  return rows;
}

const strategy_info& info_of(strategy s) {
  for (const strategy_info& row : strategies())
    if (row.which == s) return row;
  throw error("unregistered strategy " + std::to_string(static_cast<int>(s)));
}

std::string_view name_of(strategy s) {
  for (const strategy_info& row : kStrategies)
    if (row.which == s) return row.name;
  return "?";
}

strategy strategy_from_name(std::string_view name) {
  std::string expected;
  for (const strategy_info& row : kStrategies) {
    if (row.name == name) return row.which;
    expected += (expected.empty() ? "" : ", ") + std::string(row.name);
  }
  throw error("unknown strategy '" + std::string(name) + "': expected one of " + expected);
}

}  // namespace tally
