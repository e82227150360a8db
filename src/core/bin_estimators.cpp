// numpy's estimators of a number of equal bins (tally/edges.hpp: estimate_bins), step for step
// as numpy.lib._histograms_impl computes them for float64 data.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tally/edges.hpp"
#include "tally/error.hpp"
#include "tally/histogram.hpp"

namespace tally {
namespace {

constexpr double kPi = 3.141592653589793;

/// numpy's sum of contiguous doubles (add.reduce's pairwise sum): fewer than 8 values in order, up
/// to 128 in 8 interleaved partial sums, more split in two at a multiple of 8.
double pairwise_sum(const double* a, std::int64_t n) {
  if (n < 8) {
    double r = 0;
    for (std::int64_t i = 0; i < n; ++i) r += a[i];
    return r;
  }
  if (n <= 128) {
    double r[8];
    std::copy(a, a + 8, r);
    std::int64_t i = 8;
    for (; i < n - n % 8; i += 8)
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) sum += a[i];
    return sum;
  }
  std::int64_t half = n / 2;
  half -= half % 8;
  return pairwise_sum(a, half) + pairwise_sum(a + half, n - half);
}

/// numpy's mean: integer samples are cast to f64 through 8192-value buffers, each summed
/// pairwise and the buffers' sums added in order; f64 samples are summed pairwise as one run.
double mean(const std::vector<double>& x, bool integer_samples) {
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  if (!integer_samples) return pairwise_sum(x.data(), n) / static_cast<double>(n);
  constexpr std::int64_t kBuffer = 8192;
  double sum = 0;
  for (std::int64_t k = 0; k < n; k += kBuffer) sum += pairwise_sum(x.data() + k, std::min(kBuffer, n - k));
  return sum / static_cast<double>(n);
}

/// numpy.std (ddof 0): the root of the mean squared deviation from the mean.
double standard_deviation(const std::vector<double>& x, double mu) {
  std::vector<double> squares(x.size());
  std::transform(x.begin(), x.end(), squares.begin(), [mu](double v) { return (v - mu) * (v - mu); });
  return std::sqrt(pairwise_sum(squares.data(), static_cast<std::int64_t>(x.size())) / static_cast<double>(x.size()));
}

/// numpy.percentile(x, 100 q) by its default (linear) method: the values at the floor and the
/// ceiling of (n - 1) q, interpolated as numpy's _lerp does (from the upper value for t >= 0.5).
/// Reorders x.
double percentile(std::vector<double>& x, double q) {
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  const double at = static_cast<double>(n - 1) * q;
  const std::int64_t below = static_cast<std::int64_t>(std::floor(at));
  const auto value = [&](std::int64_t k) {
    std::nth_element(x.begin(), x.begin() + k, x.end());
    return x[static_cast<std::size_t>(k)];
  };
  if (below >= n - 1) return value(n - 1);
  const double a = value(below), b = value(below + 1), t = at - static_cast<double>(below);
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}

/// stone's width: the bin count in 1 .. max(100, sqrt(n)) whose leave-one-out estimate of the
/// integrated squared error is least (the first of equals), numpy's histogram counting each.
double stone_width(const std::vector<double>& x, double ptp, double first, double last, bool& at_bound) {
  const std::int64_t n = static_cast<std::int64_t>(x.size());
  if (n <= 1 || ptp == 0) return 0;
  const std::int64_t bound = std::max<std::int64_t>(100, static_cast<std::int64_t>(std::sqrt(static_cast<double>(n))));
  options o;
  o.backend = backend::cpu;
  const view samples = make_view(x.data(), n);
  std::int64_t best = 1;
  double best_score = 0;
  for (std::int64_t bins = 1; bins <= bound; ++bins) {
    histogram h(equal_bins(bins, first, last, dtype::f64, dtype::f64), o);
    h.fill(samples);
    double dot = 0;
    for (const std::uint64_t c : h.counts()) {
      const double p = static_cast<double>(c) / static_cast<double>(n);
      dot += p * p;
    }
    const double score = (2 - static_cast<double>(n + 1) * dot) / (ptp / static_cast<double>(bins));
    if (bins == 1 || score < best_score) best = bins, best_score = score;
  }
  at_bound = best == bound;
  return ptp / static_cast<double>(best);
}

}  // namespace

std::optional<bin_estimator> bin_estimator_from_name(std::string_view name) {
  for (bin_estimator e : {bin_estimator::automatic, bin_estimator::fd, bin_estimator::doane, bin_estimator::rice,
                          bin_estimator::scott, bin_estimator::sqrt, bin_estimator::stone, bin_estimator::sturges})
    if (name == name_of(e)) return e;
  return std::nullopt;
}

const char* name_of(bin_estimator e) {
  switch (e) {
    case bin_estimator::automatic: return "auto";
    case bin_estimator::fd: return "fd";
    case bin_estimator::doane: return "doane";
    case bin_estimator::rice: return "rice";
    case bin_estimator::scott: return "scott";
    case bin_estimator::sqrt: return "sqrt";
    case bin_estimator::stone: return "stone";
    case bin_estimator::sturges: return "sturges";
  }
  return "?";
}

bin_estimate estimate_bins(bin_estimator e, const double* data, std::int64_t size, double first, double last,
                           bool integer_samples) {
  std::vector<double> x;
  for (std::int64_t i = 0; i < size; ++i)
    if (data[i] >= first && data[i] <= last) x.push_back(data[i]);
  bin_estimate out;
  if (x.empty()) return out;
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  const double n = static_cast<double>(x.size()), ptp = *hi - *lo;
  const auto sturges = [&] { return ptp / (std::log2(n) + 1.0); };
  const auto square_root = [&] { return ptp / std::sqrt(n); };
  const auto fd = [&] {  // reorders x: fd and auto read nothing of x after it
    const double iqr = percentile(x, 0.75) - percentile(x, 0.25);
    return 2.0 * iqr * std::pow(n, -1.0 / 3.0);
  };
  double width = 0;
  switch (e) {
    case bin_estimator::sqrt: width = square_root(); break;
    case bin_estimator::sturges: width = sturges(); break;
    case bin_estimator::rice: width = ptp / (2.0 * std::pow(n, 1.0 / 3)); break;
    case bin_estimator::scott:
      width = std::pow(24.0 * std::pow(kPi, 0.5) / n, 1.0 / 3.0) * standard_deviation(x, mean(x, integer_samples));
      break;
    case bin_estimator::fd: width = fd(); break;
    case bin_estimator::automatic: {
      const double fd_width = std::max(fd(), square_root() / 2), sturges_width = sturges();
      width = std::min(fd_width, sturges_width);
      break;
    }
    case bin_estimator::doane: {
      if (x.size() <= 2) break;
      const double sg1 = std::sqrt(6.0 * (n - 2) / ((n + 1.0) * (n + 3)));
      const double mu = mean(x, integer_samples), sigma = standard_deviation(x, mu);
      if (!(sigma > 0.0)) break;
      std::vector<double> cubes(x.size());
      std::transform(x.begin(), x.end(), cubes.begin(), [&](double v) { return std::pow((v - mu) / sigma, 3.0); });
      const double g1 = mean(cubes, false);
      width = ptp / (1.0 + std::log2(n) + std::log2(1.0 + std::fabs(g1) / sg1));
      break;
    }
    case bin_estimator::stone: width = stone_width(x, ptp, first, last, out.at_search_bound); break;
  }
  if (width == 0) return out;
  if (integer_samples && width < 1) width = 1;
  const double bins = std::ceil((last - first) / width);
  if (!(bins <= 9.0e18))
    throw error("tally: the " + std::string(name_of(e)) + " estimator's width, " + std::to_string(width) +
                ", makes too many bins for the range");
  out.bins = static_cast<std::int64_t>(bins);
  return out;
}

}  // namespace tally
