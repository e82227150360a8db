// Number formatting: shortest round-trip text, %g, and labels that stay distinct.
#include "format.hpp"

#include <charconv>
#include <cstdio>

namespace tally_cli {

std::string shortest(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string edge_text(const tally::axis& a, std::int64_t k) {
  // lo + k stays in int64: the axis' hi = lo + bins is an int64 itself.
  if (a.kind() == tally::axis_kind::integer) return std::to_string(a.integer_lo() + k);
  return shortest(a.edge(k));
}

std::string sig(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

int distinct_digits(const std::vector<double>& increasing) {
  for (int digits = 3; digits < 17; ++digits) {
    bool distinct = true;
    for (std::size_t k = 1; k < increasing.size() && distinct; ++k)
      distinct = sig(increasing[k - 1], digits) != sig(increasing[k], digits);
    if (distinct) return digits;
  }
  return 17;
}

std::string value_text(double v, bool weighted) { return weighted ? sig(v, 6) : sig(v, 20); }

std::string pad_right(const std::string& s, std::size_t width) {
  return s + std::string(width > s.size() ? width - s.size() : 0, ' ');
}

std::string pad_left(const std::string& s, std::size_t width) {
  return std::string(width > s.size() ? width - s.size() : 0, ' ') + s;
}

}  // namespace tally_cli
