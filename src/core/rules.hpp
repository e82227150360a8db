// Builds the bin-rule parameters of an axis (shared by every backend).
#pragma once

#include <vector>

#include "core/bin_rule.hpp"
#include "tally/axis.hpp"

namespace tally::detail {

edge_rounding rounding_of(dtype edge_type);
/// The rule for a regular axis; `table`, if given, must hold axis.edges().
regular_rule make_regular_rule(const axis& a, const double* table = nullptr);
/// The rule for a variable axis; with `buckets` (from variable_buckets) it narrows its search.
variable_rule make_variable_rule(const axis& a, const std::vector<std::int64_t>* buckets = nullptr);
/// The bucket table of a variable axis: about four buckets per bin, at most 2^16.
std::vector<std::int64_t> variable_buckets(const axis& a);
integer_rule make_integer_rule(const axis& a);

}  // namespace tally::detail
