// numpy.histogram's edge rules (tally/edges.hpp).
#include "tally/edges.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
  if (std::isfinite(e.front()) && std::isfinite(e.back())) {
    try {
      axis candidate = axis::regular(bins, first, last, edge_type);
      bool same = true;
      // Bit for bit (a zero's sign too): the axis' edges are what callers return as numpy's.
      for (std::int64_t k = 0; k <= bins && same; ++k) same = same_bits(candidate.edge(k), e[static_cast<std::size_t>(k)]);
      if (same) return candidate;
    } catch (const error&) {  // edges regular's rule cannot tell apart: the variable axis
    }
  }
  // Edges that overflow to infinity bin as the variable axis' outer edges; NaN ones bin nothing.
  for (double x : e)
    if (std::isnan(x))
      throw error("tally: the edges of " + std::to_string(bins) + " bins over [" + text(first) + ", " + text(last) +
                  "] overflow " + std::string(name_of(edge_type)) + " to NaN");
  return axis::variable(std::move(e));
}

axis axis_of_edges(std::vector<double> edges) {
  const std::int64_t bins = static_cast<std::int64_t>(edges.size()) - 1;
  if (bins >= 1 && std::isfinite(edges.front()) && std::isfinite(edges.back()) && edges.front() < edges.back()) {
    try {
      axis candidate = axis::regular(bins, edges.front(), edges.back(), dtype::f64);
      bool same = true;
      for (std::int64_t k = 0; k <= bins && same; ++k)
        same = candidate.edge(k) == edges[static_cast<std::size_t>(k)];
      if (same) return candidate;
    } catch (const error&) {
    }
  }
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
