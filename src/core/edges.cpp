// numpy.histogram's edge rules (tally/edges.hpp).
#include "tally/edges.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "core/float_format.hpp"
#include "core/memory.hpp"
#include "tally/error.hpp"

namespace tally {
namespace {

/// x rounded to the float type t (f64: x itself).
double rounded(double x, dtype t) {
  switch (t) {
    case dtype::f64: return x;
    case dtype::f32: return detail::round_to_format(x, detail::f32_format);
    case dtype::f16: return detail::round_to_format(x, detail::f16_format);
    case dtype::bf16: return detail::round_to_format(x, detail::bf16_format);
    default: throw error("tally: edges are f16, bf16, f32 or f64, not " + std::string(name_of(t)));
  }
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// The shortest text that reads back as x (the messages' numbers).
std::string text(double x) {
  char buffer[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, x);
    if (std::strtod(buffer, nullptr) == x || std::isnan(x)) break;
  }
  return buffer;
}

/// The regular axis over [lo, hi] whose edges are `e` (bit for bit where `bits`, else equal as
/// numbers: it bins the same), or none: ends that are not finite, or edges regular's rule cannot
/// tell apart.
std::optional<axis> regular_with_edges(const std::vector<double>& e, double lo, double hi, dtype edge_type, bool bits) {
  if (!std::isfinite(e.front()) || !std::isfinite(e.back())) return std::nullopt;
  const std::int64_t bins = static_cast<std::int64_t>(e.size()) - 1;
  try {
    axis candidate = axis::regular(bins, lo, hi, edge_type);
    for (std::int64_t k = 0; k <= bins; ++k) {
      const double x = candidate.edge(k), y = e[static_cast<std::size_t>(k)];
      if (bits ? !same_bits(x, y) : x != y) return std::nullopt;
    }
    return candidate;
  } catch (const error&) {
    return std::nullopt;
  }
}

}  // namespace

std::vector<double> linspace_edges(std::int64_t bins, double first, double last, dtype arithmetic,
                                   dtype edge_type) {
  if (bins < 1) throw error("tally: equal bins need bins >= 1, got " + std::to_string(bins));
  if (arithmetic != dtype::f16 && arithmetic != dtype::f32 && arithmetic != dtype::f64)
    throw error("tally: numpy computes edges in f16, f32 or f64, not " + std::string(name_of(arithmetic)));
  // Each operation on two values of the arithmetic type, computed in double and rounded once:
  // exact for f16 and f32, whose products and quotients double rounding leaves correctly rounded.
  detail::ensure_memory(detail::times(static_cast<std::uint64_t>(bins) + 1, sizeof(double)), "the edges");
  const auto in = [arithmetic](double x) { return rounded(x, arithmetic); };
  const double start = in(first), stop = in(last);
  const double div = in(static_cast<double>(bins));  // numpy's num - 1, an integer taken into the type
  const double delta = in(stop - start);
  const double step = in(delta / div);
  std::vector<double> edges(static_cast<std::size_t>(bins) + 1);
  for (std::int64_t i = 0; i <= bins; ++i) {
    const double k = in(static_cast<double>(i));  // numpy.arange(0, num) in the type
    // numpy divides first where the step underflows to zero (denormal ranges).
    const double y = step == 0 ? in(in(k / div) * delta) : in(k * step);
    edges[static_cast<std::size_t>(i)] = rounded(in(y + start), edge_type);
  }
  edges.back() = rounded(stop, edge_type);
  return edges;
}

axis equal_bins(std::int64_t bins, double first, double last, dtype arithmetic, dtype edge_type) {
  std::vector<double> e = linspace_edges(bins, first, last, arithmetic, edge_type);
  for (std::size_t k = 0; k + 1 < e.size(); ++k)
    if (e[k] >= e[k + 1])
      throw error("Too many bins for data range. Cannot create " + std::to_string(bins) + " finite-sized bins.");
  // Bit for bit (a zero's sign too): the axis' edges are what callers return as numpy's.
  if (auto regular = regular_with_edges(e, first, last, edge_type, true)) return *regular;
  // Edges that overflow to infinity bin as the variable axis' outer edges; NaN ones bin nothing.
  for (double x : e)
    if (std::isnan(x))
      throw error("tally: the edges of " + std::to_string(bins) + " bins over [" + text(first) + ", " + text(last) +
                  "] overflow " + std::string(name_of(edge_type)) + " to NaN");
  return axis::variable(std::move(e));
}

axis axis_of_edges(std::vector<double> edges) {
  if (edges.size() >= 2 && edges.front() < edges.back())
    if (auto regular = regular_with_edges(edges, edges.front(), edges.back(), dtype::f64, false)) return *regular;
  return axis::variable(std::move(edges));
}

std::pair<double, double> data_range(bool any, double min, double max, dtype sample) {
  if (!any) return {0.0, 1.0};
  if (!std::isfinite(min) || !std::isfinite(max))
    throw error("autodetected range of [" + text(min) + ", " + text(max) + "] is not finite");
  if (min == max) {
    const dtype t = sample == dtype::f16 || sample == dtype::f32 ? sample : dtype::f64;
    return {rounded(min - 0.5, t), rounded(max + 0.5, t)};
  }
  return {min, max};
}

}  // namespace tally
