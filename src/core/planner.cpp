// The planner: one pure function from the job's parameters to a policy, with its reasons.
#include <algorithm>
#include <sstream>
#include <string>
#include <thread>

#include "tally/error.hpp"
#include "tally/plan.hpp"

namespace tally {
namespace {

template <class E, std::size_t N>
E from_name(std::string_view name, const std::pair<E, std::string_view> (&names)[N],
            std::string_view what) {
  std::string expected;
  for (const auto& [value, n] : names) {
    if (n == name) return value;
    expected += (expected.empty() ? "" : ", ") + std::string(n);
  }
  throw error("unknown " + std::string(what) + " '" + std::string(name) + "': expected one of " +
              expected);
}

template <class E, std::size_t N>
std::string_view to_name(E value, const std::pair<E, std::string_view> (&names)[N]) {
  for (const auto& [v, n] : names)
    if (v == value) return n;
  return "?";
}

constexpr std::pair<backend, std::string_view> kBackends[] = {
    {backend::automatic, "auto"}, {backend::cpu, "cpu"}, {backend::cuda, "cuda"}};
constexpr std::pair<strategy, std::string_view> kStrategies[] = {
    {strategy::automatic, "automatic"}, {strategy::cpu_private, "cpu_private"},
    {strategy::global_atomic, "global_atomic"}, {strategy::warp_aggregated, "warp_aggregated"},
    {strategy::shared, "shared"}};
constexpr std::pair<count_type, std::string_view> kCounts[] = {
    {count_type::u64, "u64"}, {count_type::u32, "u32"}};

int hardware_threads() {
  unsigned t = std::thread::hardware_concurrency();
  return t == 0 ? 1 : static_cast<int>(t);
}

policy plan_cpu(const plan_request& r) {
  policy p;
  p.where = backend::cpu;
  p.chosen = strategy::cpu_private;

  // Threads: every thread zeroes and merges a private copy of all cells, so each needs
  // enough samples to pay for it; below that, fewer threads are faster. Measured (2-core VM,
  // 2^26 i64, bench/results/2026-11-22-cpu-fcf2e16.md): 2 threads 1.3-2.0x one thread.
  const int available = r.threads > 0 ? r.threads : hardware_threads();
  const std::int64_t per_thread = std::max<std::int64_t>(p.block, 2 * r.cells);
  const std::int64_t useful = std::max<std::int64_t>(1, r.n / per_thread);
  p.threads = static_cast<int>(std::min<std::int64_t>(available, useful));
  p.reasons.push_back("threads " + std::to_string(p.threads) + " of " +
                      std::to_string(available) +
                      ": one per max(65536, 2 x cells) samples, so private copies pay off");

  // Replicas: a thread alternates between R copies of the counters, so runs of equal
  // samples do not wait on one counter's store-to-load latency. Only for few cells, where
  // R copies stay in L1. Measured (i64, 256 bins, 1 thread, bench/PERFORMANCE.md entry 3):
  // skewed80 538 -> 952 Melem/s, uniform 1029 -> 947.
  if (!r.weighted && r.cells * 4 <= 4096 && r.dims == 1) {
    p.replicas = 4;
    p.reasons.push_back("replicas 4: few cells; 4 copies break the dependency chain on a hot bin");
  } else {
    p.reasons.push_back("replicas 1: " + std::string(r.weighted ? "weighted sums follow the block order"
                                                                : "many cells: copies would leave L1"));
  }

  // Edge table: a regular axis looks its (rounded) edges up instead of computing them
  // (bench/PERFORMANCE.md entry 4: 175 -> 390 Melem/s per thread with the table-only rule).
  p.edge_table = r.kind == axis_kind::regular && r.cells <= (1 << 20);
  p.reasons.push_back(p.edge_table ? "edge table: regular edges looked up (<= 2^20 bins)"
                                   : "edges computed per sample (table would not fit in cache)");
  return p;
}

policy plan_cuda(const plan_request& r) {
  if (r.weighted) throw error("backend cuda: weighted sums are not built yet; use backend cpu");
  if (r.wanted == strategy::cpu_private)
    throw error("strategy cpu_private does not run on the GPU");
  policy p;
  p.where = backend::cuda;
  p.threads = 0;
  p.block_threads = 256;
  p.grid_blocks = 4 * std::max(1, r.device_sms);
  p.reasons.push_back("grid " + std::to_string(p.grid_blocks) + " x 256: 4 blocks per SM, grid-stride");
  // shared where the counters fit; beyond that, warp_aggregated: global atomics alone measured
  // 292 GB/s on uniform i32 65536 bins but 5.4 on one hot bin, every atomic on one address
  // (bench/results/2026-11-22-h100-gpu-6f2dcde.md); aggregation spends one atomic per warp there.
  const std::int64_t shared_bytes = (r.cells + 3) * 4;
  const bool fits = shared_bytes <= r.device_shared_bytes;
  if (r.wanted == strategy::shared && !fits)
    throw error("strategy shared: " + std::to_string(r.cells) + " cells need " +
                std::to_string(shared_bytes) + " bytes of shared memory, the device has " +
                std::to_string(r.device_shared_bytes) + " per block");
  p.chosen = r.wanted != strategy::automatic ? r.wanted : fits ? strategy::shared : strategy::warp_aggregated;
  p.reasons.push_back(p.chosen == strategy::shared
                          ? "shared: the cells' 32-bit counters fit in one block's shared memory"
                          : std::string(name_of(p.chosen)) + ": " +
                                (fits ? "asked for" : "the cells do not fit in shared memory; one atomic per warp and bin"));
  return p;
}

}  // namespace

std::string_view name_of(backend b) { return to_name(b, kBackends); }
std::string_view name_of(strategy s) { return to_name(s, kStrategies); }
std::string_view name_of(count_type c) { return to_name(c, kCounts); }
backend backend_from_name(std::string_view name) { return from_name(name, kBackends, "backend"); }
strategy strategy_from_name(std::string_view name) {
  return from_name(name, kStrategies, "strategy");
}

policy plan(const plan_request& r) {
  if (r.cells < 1) throw error("plan: cells must be >= 1, got " + std::to_string(r.cells));
  if (r.n < 0) throw error("plan: n must be >= 0, got " + std::to_string(r.n));
  switch (r.where) {
    case backend::cpu: {
      if (r.wanted != strategy::automatic && r.wanted != strategy::cpu_private)
        throw error("strategy " + std::string(name_of(r.wanted)) + " does not run on the CPU");
      return plan_cpu(r);
    }
    case backend::cuda:
      return plan_cuda(r);
    default:
      throw error("plan: resolve backend::automatic to cpu or cuda before planning");
  }
}

std::string describe(const policy& p) {
  std::ostringstream s;
  s << "backend    " << name_of(p.where) << "\n"
    << "strategy   " << name_of(p.chosen) << "\n";
  if (p.where == backend::cuda) {
    s << "launch     " << p.grid_blocks << " blocks x " << p.block_threads << " threads\n";
  } else {
    s << "threads    " << p.threads << "\n"
      << "replicas   " << p.replicas << "\n"
      << "edge table " << (p.edge_table ? "yes" : "no") << "\n"
      << "block      " << p.block << " samples\n";
  }
  s << "why:\n";
  for (const auto& reason : p.reasons) s << "  - " << reason << "\n";
  return s.str();
}

}  // namespace tally
