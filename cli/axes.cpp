// Axis defaults follow numpy.histogram; the one deliberate difference is that NaN values do
// not poison the autodetected range (numpy raises), they are counted as dropped instead.
#include "axes.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>
#include <limits>
#include <string>

#include "errors.hpp"
#include "format.hpp"
#include "tally/edges.hpp"
#include "tally/error.hpp"

namespace tally_cli {
namespace {

constexpr std::int64_t kDefaultBins = 64;
constexpr std::uint64_t kMaxIntegerSpan = 65536;        // default one-bin-per-integer axes
constexpr std::uint64_t kMaxAutoIntegerBins = 1 << 24;  // --integer with a data-derived range

/// The one entry of `list` for `column`: the list holds one entry for all columns or one each.
template <class T>
const T& pick(const std::vector<T>& list, int column, int columns, const char* option) {
  if (list.size() == 1) return list[0];
  if (static_cast<int>(list.size()) == columns) return list[column];
  throw usage_error(std::string(option) + " gives " + std::to_string(list.size()) + " values for " +
                    std::to_string(columns) + " axes/channels; give one for all or one for each");
}

/// A whole number that an int64 holds (every double in (-2^63, 2^63) that is whole).
bool whole(double v) { return std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 0x1p63; }

/// Bin counts in plain decimal digits: "0x10", "1e3", "+5", " 5" and "" are refused rather
/// than read as whatever number strtod makes of them.
std::vector<std::int64_t> parse_bins(const std::string& text) {
  std::vector<std::int64_t> out;
  if (tally::bin_estimator_from_name(text)) return out;
  for (const std::string& item : split_commas(text)) {
    std::int64_t v = 0;
    const bool digits = !item.empty() && std::all_of(item.begin(), item.end(), [](unsigned char c) {
      return c >= '0' && c <= '9';
    });
    // All digits: from_chars reads them all, or fails on a count past int64.
    if (!digits || std::from_chars(item.data(), item.data() + item.size(), v).ec != std::errc() || v < 1)
      throw usage_error("--bins: '" + item +
                        "' is not a number of bins: a whole number >= 1 in decimal digits "
                        "(or a comma-separated list of them, one per axis/channel), or one of numpy's "
                        "estimators auto, fd, doane, rice, scott, sqrt, stone, sturges");
    out.push_back(v);
  }
  return out;
}

std::vector<std::pair<double, double>> parse_ranges(const std::string& text) {
  const std::vector<double> v = parse_numbers(text, "--range");
  if (v.size() % 2) throw usage_error("--range takes LO,HI pairs, one per axis or channel");
  std::vector<std::pair<double, double>> out;
  for (std::size_t k = 0; k < v.size(); k += 2) {
    if (!std::isfinite(v[k]) || !std::isfinite(v[k + 1]) || !(v[k] < v[k + 1]))
      throw usage_error("--range: " + sig(v[k]) + "," + sig(v[k + 1]) +
                        " is not a finite range with LO < HI");
    out.emplace_back(v[k], v[k + 1]);
  }
  return out;
}

/// hi - lo for lo <= hi without signed overflow.
std::uint64_t span(std::int64_t lo, std::int64_t hi) {
  return static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
}

std::int64_t checked_int(double v, const char* what) {
  if (!whole(v)) throw failure(std::string(what) + ": " + sig(v, 17) + " is not a usable integer");
  return static_cast<std::int64_t>(v);
}

tally::axis integer_axis(const axis_spec& spec, const source_info& input, const extrema& data) {
  if (spec.range)
    return tally::axis::integer(static_cast<std::int64_t>(spec.range->first),
                                static_cast<std::int64_t>(spec.range->second));
  if (input.integer_hi) return tally::axis::integer(0, *input.integer_hi);
  if (!data.any) throw failure("every value is NaN, so the data give no range; give --range");
  const std::int64_t lo = checked_int(std::floor(to_double(data.lo)), "--integer minimum");
  const std::int64_t hi = checked_int(std::floor(to_double(data.hi)), "--integer maximum");
  if (span(lo, hi) >= kMaxAutoIntegerBins)
    throw failure("--integer over the data's range [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "] would need " + std::to_string(span(lo, hi) + 1) +
                  " bins; give --range");
  return tally::axis::integer(lo, hi + 1);
}

/// numpy's range from the data (tally::data_range: a constant one gets [v - 0.5, v + 0.5]), with
/// the option that fixes a range that is not finite. The input is not empty (run_hist refuses
/// that), so no values are NaN values: numpy's "autodetected range of [nan, nan]" error.
std::pair<double, double> data_range(const extrema& data, tally::dtype sample) {
  if (!data.any) throw failure("every value is NaN, so the data give no range; give --range");
  try {
    return tally::data_range(data.any, to_double(data.lo), to_double(data.hi), sample);
  } catch (const tally::error& e) {
    throw failure(std::string(e.what()) + "; give --range");
  }
}

/// The range of equal bins: --range, else numpy's from the data.
std::pair<double, double> equal_bins_range(const axis_spec& spec, const source_info& input, const extrema& data) {
  return spec.range ? *spec.range : data_range(data, input.type);
}

/// numpy's bin type (the edges' float type) for samples of type `sample`: their own for f16 and
/// f32 (bf16, which numpy lacks, as tally's regular axis rounds), f64 for the others.
tally::dtype edge_type_for(tally::dtype sample) {
  switch (sample) {
    case tally::dtype::f16:
    case tally::dtype::bf16:
    case tally::dtype::f32:
      return sample;
    default:
      return tally::dtype::f64;
  }
}

}  // namespace

axis_options parse_axis_options(const hist_args& args) {
  axis_options o;
  if (!args.bins.empty()) o.bins = parse_bins(args.bins);
  o.estimator = tally::bin_estimator_from_name(args.bins);
  if (o.estimator && !args.weights.empty())
    throw usage_error("--bins " + args.bins + " estimates from unweighted data; it does not go with --weights "
                      "(numpy: \"Automated estimation of the number of bins is not supported for weighted data\")");
  if (!args.range.empty()) o.ranges = parse_ranges(args.range);
  for (const std::string& e : args.edges) o.edges.push_back(parse_numbers(e, "--edges"));
  o.integer = args.integer;
  if (!o.edges.empty() && (!o.bins.empty() || !o.ranges.empty() || o.integer))
    throw usage_error("--edges fixes the bins; it does not go with --bins, --range or --integer");
  if (o.integer && (!o.bins.empty() || o.estimator))
    throw usage_error("--integer makes one bin per integer; it does not go with --bins");
  if (o.integer)
    for (const auto& [lo, hi] : o.ranges)
      if (!whole(lo) || !whole(hi))
        throw usage_error("--integer --range LO,HI needs whole numbers (the integers LO..HI-1)");
  return o;
}

std::vector<axis_spec> axis_specs(const axis_options& o, int columns) {
  std::vector<axis_spec> specs(columns);
  for (int c = 0; c < columns; ++c) {
    axis_spec& s = specs[c];
    s.integer = o.integer;
    if (!o.bins.empty()) s.bins = pick(o.bins, c, columns, "--bins");
    s.estimator = o.estimator;
    if (!o.ranges.empty()) s.range = pick(o.ranges, c, columns, "--range");
    if (!o.edges.empty()) s.edges = pick(o.edges, c, columns, "--edges");
  }
  return specs;
}

bool needs_first_pass(const axis_spec& spec, const source_info& input) {
  if (spec.estimator) return true;
  if (spec.edges || spec.range) return false;
  return !(input.integer_hi && (spec.integer || !spec.bins));
}

std::int64_t estimated_bins(const axis_spec& spec, const source_info& input, const extrema& data,
                            const tally::view& values) {
  equal_bins_range(spec, input, data);  // the data give a range, or --range does
  std::optional<std::pair<tally::range_end, tally::range_end>> range;
  if (spec.range)
    range.emplace(tally::range_end::python_float(spec.range->first), tally::range_end::python_float(spec.range->second));
  const tally::bin_estimate e = tally::estimate_bins(*spec.estimator, values, range);
  const std::string name = tally::name_of(*spec.estimator);
  if (e.at_search_bound)
    std::cerr << "tally: warning: the number of bins estimated may be suboptimal (stone's search ended at "
              << e.bins << " bins, its bound)\n";
  if (e.failed != tally::bin_estimate::failure::none)
    throw failure("--bins " + name + ": numpy's estimator fails on these data: " + e.message);
  if (e.bins < 1)
    throw failure("--bins " + name + ": the estimate is " + std::to_string(e.bins) +
                  " bins (its width exceeds the range); give --bins N");
  return e.bins;
}

tally::axis make_axis(const axis_spec& spec, const source_info& input, const extrema& data) {
  if (spec.edges) return tally::axis::variable(*spec.edges);
  if (spec.integer) return integer_axis(spec, input, data);
  if (!spec.bins && !spec.range && !spec.estimator) {
    if (input.integer_hi) return tally::axis::integer(0, *input.integer_hi);
    if (!tally::is_floating(input.type) && data.any) {
      const auto lo = to_int64(data.lo), hi = to_int64(data.hi);
      if (lo && hi && span(*lo, *hi) <= kMaxIntegerSpan &&
          *hi < std::numeric_limits<std::int64_t>::max())
        return tally::axis::integer(*lo, *hi + 1);
    }
  }
  // numpy computes the edges in the range's type: f64 for --range (decimal numbers, as Python's
  // floats), the samples' own float type for a range from the data (f64 for integers; bf16 as f64).
  const tally::dtype edges = edge_type_for(input.type);
  const tally::dtype arithmetic = spec.range || edges == tally::dtype::bf16 ? tally::dtype::f64 : edges;
  const auto [lo, hi] = equal_bins_range(spec, input, data);
  return tally::equal_bins(spec.bins.value_or(kDefaultBins), lo, hi, arithmetic, edges);
}

}  // namespace tally_cli
