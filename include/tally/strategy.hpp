// The strategy registry: every named strategy as data (its name, backend, the classic technique
// it implements, where it applies and when the planner picks it), read by the planner's names,
// the Python bindings, the CLI (`tally strategies`) and the benchmarks.
#pragma once

#include <string_view>
#include <vector>

#include "tally/plan.hpp"

namespace tally {

/// One registered strategy.
struct strategy_info {
  strategy which;
  std::string_view name;         // as options, the CLI and Python spell it
  backend where;                 // cpu or cuda; automatic for `automatic`, which plans for either
  std::string_view technique;    // the classic parallel pattern it implements
  std::string_view applies;      // the fills it takes when asked for (others are a tally::error)
  std::string_view chosen_when;  // when the planner picks it unasked, and the measurement behind it
};

/// Every strategy, in the enum's order (automatic first).
const std::vector<strategy_info>& strategies();
/// The registry's row of `s`.
const strategy_info& info_of(strategy s);

}  // namespace tally
