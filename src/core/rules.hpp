// Builds the bin-rule parameters of an axis (shared by every backend).
#pragma once

#include "core/bin_rule.hpp"
#include "tally/axis.hpp"

namespace tally::detail {

edge_rounding rounding_of(dtype edge_type);
/// The rule for a regular axis; `table`, if given, must hold axis.edges().
regular_rule make_regular_rule(const axis& a, const double* table = nullptr);
variable_rule make_variable_rule(const axis& a);
integer_rule make_integer_rule(const axis& a);

}  // namespace tally::detail
