// CPU benchmark: tally's CPU backend against a plain scalar loop, on the ANCHORS.md CPU cases.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tally/tally.hpp"

namespace {

constexpr std::int64_t kN = std::int64_t{1} << 26;  // ANCHORS.md's CPU size

enum class spread { uniform, hotspot, skewed80 };
const char* name_of(spread s) {
  return s == spread::uniform ? "uniform" : s == spread::hotspot ? "hotspot" : "skewed80";
}

/// Values in [0, range): uniform, all in one bin, or 80% in one bin and the rest uniform.
template <class T>
const std::vector<T>& samples(spread s, double range) {
  static std::vector<T> data;
  static std::pair<int, double> key{-1, 0};
  if (key == std::make_pair(static_cast<int>(s), range)) return data;
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> uni(0, range);
  std::uniform_real_distribution<double> coin(0, 1);
  data.resize(static_cast<std::size_t>(kN));
  const double hot = range * 0.3;
  for (auto& v : data) {
    const bool is_hot = s == spread::hotspot || (s == spread::skewed80 && coin(rng) < 0.8);
    v = static_cast<T>(is_hot ? hot : uni(rng));
  }
  key = {static_cast<int>(s), range};
  return data;
}

void report(benchmark::State& state, std::size_t sample_bytes) {
  state.SetItemsProcessed(state.iterations() * kN);
  state.SetBytesProcessed(state.iterations() * kN * static_cast<std::int64_t>(sample_bytes));
}

// numpy.bincount(i64, minlength=bins) as tally: an integer axis.
void tally_bincount_i64(benchmark::State& state) {
  const auto bins = state.range(0);
  const auto s = static_cast<spread>(state.range(1));
  const auto& x = samples<std::int64_t>(s, static_cast<double>(bins));
  tally::options o;
  o.threads = static_cast<int>(state.range(2));
  tally::histogram h(tally::axis::integer(0, bins), o);
  for (auto _ : state) {
    h.reset();
    h.fill(tally::make_view(x.data(), kN));
    benchmark::DoNotOptimize(h.counts_u64());
  }
  state.SetLabel(name_of(s));
  report(state, sizeof(std::int64_t));
}

void scalar_bincount_i64(benchmark::State& state) {
  const auto bins = state.range(0);
  const auto s = static_cast<spread>(state.range(1));
  const auto& x = samples<std::int64_t>(s, static_cast<double>(bins));
  std::vector<std::uint64_t> h(static_cast<std::size_t>(bins));
  for (auto _ : state) {
    std::fill(h.begin(), h.end(), 0);
    for (std::int64_t v : x)
      if (v >= 0 && v < bins) ++h[static_cast<std::size_t>(v)];
    benchmark::DoNotOptimize(h.data());
  }
  state.SetLabel(name_of(s));
  report(state, sizeof(std::int64_t));
}

// Fills of the T samples in [0, 1] of spread state.range(1) into `axis` with state.range(2)
// threads.
template <class T> void time_fills(benchmark::State& state, tally::axis axis) {
  const auto s = static_cast<spread>(state.range(1));
  const auto& x = samples<T>(s, 1.0);
  tally::options o;
  o.threads = static_cast<int>(state.range(2));
  tally::histogram h(std::move(axis), o);
  for (auto _ : state) {
    h.reset();
    h.fill(tally::make_view(x.data(), kN));
    benchmark::DoNotOptimize(h.counts_u64());
  }
  state.SetLabel(name_of(s));
  report(state, sizeof(T));
}

// numpy.histogram(f32, bins=256, range=(0, 1)): a regular axis with f32 edges, numpy-exact.
void tally_histogram_f32_even(benchmark::State& state) {
  time_fills<float>(state, tally::axis::regular(state.range(0), 0.0, 1.0, tally::dtype::f32));
}

// The plain loop a user would write (not numpy-exact at edges): index = (x - lo) * bins.
void scalar_histogram_f32_even(benchmark::State& state) {
  const auto bins = state.range(0);
  const auto s = static_cast<spread>(state.range(1));
  const auto& x = samples<float>(s, 1.0);
  std::vector<std::uint64_t> h(static_cast<std::size_t>(bins));
  for (auto _ : state) {
    std::fill(h.begin(), h.end(), 0);
    for (float v : x) {
      if (!(v >= 0.0f && v <= 1.0f)) continue;
      auto k = static_cast<std::int64_t>(v * static_cast<float>(bins));
      ++h[static_cast<std::size_t>(k < bins ? k : bins - 1)];
    }
    benchmark::DoNotOptimize(h.data());
  }
  state.SetLabel(name_of(s));
  report(state, sizeof(float));
}

std::vector<double> random_edges(std::int64_t bins) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uni(0, 1);
  std::vector<double> e(static_cast<std::size_t>(bins) + 1);
  for (auto& v : e) v = uni(rng);
  std::sort(e.begin(), e.end());
  e.front() = 0.0;
  e.back() = 1.0;
  return e;
}

// numpy.histogram(f32, bins=edges) with arbitrary edges: a variable axis.
void tally_histogram_f32_edges(benchmark::State& state) {
  time_fills<float>(state, tally::axis::variable(random_edges(state.range(0))));
}

void scalar_histogram_f32_edges(benchmark::State& state) {
  const auto s = static_cast<spread>(state.range(1));
  const auto& x = samples<float>(s, 1.0);
  const auto e = random_edges(state.range(0));
  std::vector<std::uint64_t> h(e.size() - 1);
  for (auto _ : state) {
    std::fill(h.begin(), h.end(), 0);
    for (float v : x) {
      if (!(v >= e.front() && v <= e.back())) continue;
      auto it = std::upper_bound(e.begin(), e.end(), static_cast<double>(v));
      auto k = static_cast<std::size_t>(it - e.begin()) - 1;
      ++h[k < h.size() ? k : h.size() - 1];
    }
    benchmark::DoNotOptimize(h.data());
  }
  state.SetLabel(name_of(s));
  report(state, sizeof(float));
}

// numpy.histogram(f64, bins=256, range=(0, 1)) and with arbitrary edges.
void tally_histogram_f64_even(benchmark::State& state) {
  time_fills<double>(state, tally::axis::regular(state.range(0), 0.0, 1.0));
}
void tally_histogram_f64_edges(benchmark::State& state) {
  time_fills<double>(state, tally::axis::variable(random_edges(state.range(0))));
}

// numpy.histogramdd of `dims` f64 columns (uniform in [0, 1), each its own shuffle) over
// state.range(0) even bins an axis, one thread: kN / dims samples, so that every row reads kN
// values.
void tally_histogramdd_f64(benchmark::State& state) {
  const auto dims = static_cast<std::size_t>(state.range(1));
  const auto& x = samples<double>(spread::uniform, 1.0);
  const std::int64_t n = kN / static_cast<std::int64_t>(dims);
  std::vector<tally::axis> axes;
  std::vector<tally::view> columns;
  for (std::size_t d = 0; d < dims; ++d) {
    axes.push_back(tally::axis::regular(state.range(0), 0.0, 1.0));
    columns.push_back(tally::make_view(x.data() + static_cast<std::int64_t>(d) * n, n));
  }
  tally::options o;
  o.threads = 1;
  tally::histogram h(axes, o);
  for (auto _ : state) {
    h.reset();
    h.fill(columns);
    benchmark::DoNotOptimize(h.counts_u64());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetBytesProcessed(state.iterations() * kN * static_cast<std::int64_t>(sizeof(double)));
}

// The limit of the rows above: one thread's read of the same f64 bytes (a sum, vectorized).
void read_f64(benchmark::State& state) {
  const auto& x = samples<double>(spread::uniform, 1.0);
  for (auto _ : state) {
    double sums[8] = {};
    for (std::size_t i = 0; i < x.size(); i += 8)
      for (int l = 0; l < 8; ++l) sums[l] += x[i + static_cast<std::size_t>(l)];
    benchmark::DoNotOptimize(sums);
  }
  report(state, sizeof(double));
}

// Weighted: i64 index + f64 weight, 256 bins, deterministic block-order sums.
void tally_weighted_i64_f64(benchmark::State& state) {
  const auto s = static_cast<spread>(state.range(1));
  const auto& x = samples<std::int64_t>(s, static_cast<double>(state.range(0)));
  const auto& w = samples<double>(spread::uniform, 1.0);
  tally::options o;
  o.weighted = true;
  o.threads = static_cast<int>(state.range(2));
  tally::histogram h(tally::axis::integer(0, state.range(0)), o);
  for (auto _ : state) {
    h.reset();
    h.fill(tally::make_view(x.data(), kN), tally::make_view(w.data(), kN));
    benchmark::DoNotOptimize(h.sums_data());
  }
  state.SetLabel(name_of(s));
  report(state, sizeof(std::int64_t) + sizeof(double));
}

void args(benchmark::internal::Benchmark* b, std::vector<std::int64_t> bins, bool threads) {
  for (auto n : bins)
    for (int s = 0; s < 3; ++s)
      for (int t : threads ? std::vector<int>{1, 0} : std::vector<int>{1}) b->Args({n, s, t});
  b->ArgNames({"bins", "spread", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(tally_bincount_i64)->Apply([](auto* b) { args(b, {256, 65536}, true); });
BENCHMARK(scalar_bincount_i64)->Apply([](auto* b) { args(b, {256, 65536}, false); });
BENCHMARK(tally_histogram_f32_even)->Apply([](auto* b) { args(b, {256}, true); });
BENCHMARK(scalar_histogram_f32_even)->Apply([](auto* b) { args(b, {256}, false); });
BENCHMARK(tally_histogram_f32_edges)->Apply([](auto* b) { args(b, {256}, true); });
BENCHMARK(scalar_histogram_f32_edges)->Apply([](auto* b) { args(b, {256}, false); });
BENCHMARK(tally_histogram_f64_even)->Apply([](auto* b) { args(b, {256}, true); });
BENCHMARK(tally_histogram_f64_edges)->Apply([](auto* b) { args(b, {256}, true); });
BENCHMARK(tally_histogramdd_f64)->Args({64, 2})->Args({16, 3})->ArgNames({"bins", "dims"})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(read_f64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(tally_weighted_i64_f64)->Apply([](auto* b) { args(b, {256}, true); });

}  // namespace

int main(int argc, char** argv) {
#ifndef NDEBUG
  std::fprintf(stderr, "tally_cpu_bench: refusing to time a debug build; configure with -DCMAKE_BUILD_TYPE=Release\n");
  return 1;
#endif
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
