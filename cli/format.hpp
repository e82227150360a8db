// Number formatting shared by the report, the files and the plots.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tally/axis.hpp"

namespace tally_cli {

/// Shortest text that reads back as the same double (for CSV).
std::string shortest(double v);
/// Edge k of an axis, exactly: integer axes as integers (their edges pass 2^53, where a double
/// no longer holds every integer), other axes as shortest().
std::string edge_text(const tally::axis& a, std::int64_t k);
/// `sig` significant digits, printf's %g.
std::string sig(double v, int digits = 6);
/// The fewest significant digits (at least 3) that print neighbouring values of an increasing
/// sequence differently, so edge labels never look equal.
int distinct_digits(const std::vector<double>& increasing);
/// A count (integral) or a sum of weights, as a person reads it.
std::string value_text(double v, bool weighted);

/// Spaces after (pad_right) or before (pad_left) `s` up to `width` bytes.
std::string pad_right(const std::string& s, std::size_t width);
std::string pad_left(const std::string& s, std::size_t width);

}  // namespace tally_cli
