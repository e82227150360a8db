// The backend table and the public backends() report.
#include <omp.h>

#include <algorithm>
#include <limits>
#include <string>

#include "core/backend.hpp"

namespace tally {
namespace detail {

const std::vector<backend_ops>& backend_table() {
  static const std::vector<backend_ops> table = [] {
    std::vector<backend_ops> t{cpu_backend()};
#if defined(TALLY_HAVE_CUDA)
    t.push_back(cuda_backend());
#endif
    return t;
  }();
  return table;
}

namespace {

std::string overflow_message(const char* call, std::size_t k, std::uint64_t count, std::uint64_t add, int bits) {
  return std::string(call) + ": bin " + std::to_string(k) + " would overflow its " + std::to_string(bits) + "-bit count (" +
         std::to_string(count) + " + " + std::to_string(add) + "); use 64-bit counts";
}

/// Counts to add at or above which the check and the addition run on several threads: a
/// copy back of 2^20 counts took about 0.5 ms on one (the synchronous fill of 2^20 bins, 2.6 ms
/// a GiB against the stream-ordered 1.7; bench/PERFORMANCE.md, "Synchronous fills, fixed costs and
/// temporary memory").
constexpr std::int64_t kParallelCells = std::int64_t{1} << 16;

/// Throws, naming the first cell whose count the addition would overflow, if there is one
/// (`call` begins the message).
template <class C, class A>
void check_room(const C* destination, const A* add, std::size_t n, int threads, const char* call = "fill") {
  const std::uint64_t limit = std::numeric_limits<C>::max();
  const auto cells = static_cast<std::int64_t>(n);
  std::int64_t first = cells;
  // Below the threshold no parallel region at all: entering one, even of one thread, costs the
  // runtime's team set-up, a few microseconds of a small call.
  if (cells < kParallelCells) {
    for (std::int64_t k = 0; k < cells && first == cells; ++k)
      if (add[k] > limit - destination[k]) first = k;
  } else {
#pragma omp parallel for num_threads(threads) reduction(min : first)
    for (std::int64_t k = 0; k < cells; ++k)
      if (add[k] > limit - destination[k] && k < first) first = k;
  }
  if (first == cells) return;
  const auto k = static_cast<std::size_t>(first);
  throw error(overflow_message(call, k, destination[k], add[k], 8 * sizeof(C)));
}

/// Each cell checked, then added: where a cell would overflow, nothing is added.
template <class C, class A>
void add_checked(C* destination, const A* add, std::size_t n, int threads, const char* call = "fill") {
  check_room(destination, add, n, threads, call);
  const auto cells = static_cast<std::int64_t>(n);
  if (cells < kParallelCells) {
    for (std::int64_t k = 0; k < cells; ++k) destination[k] += static_cast<C>(add[k]);
    return;
  }
#pragma omp parallel for num_threads(threads)
  for (std::int64_t k = 0; k < cells; ++k) destination[k] += static_cast<C>(add[k]);
}

/// The CPU plan's threads (a caller's options::threads, at most the machine's), else every
/// hardware thread.
int threads_of(const fill_job& job) {
  return job.plan.threads > 0 ? std::min(job.plan.threads, hardware_threads()) : omp_get_max_threads();
}

}  // namespace

void check_counts(const fill_job& job, const std::uint64_t* add) {
  const auto n = static_cast<std::size_t>(job.cells);
  if (job.counts32) check_room(job.counts32, add, n, threads_of(job));
  else check_room(job.counts64, add, n, threads_of(job));
}

void add_counts(const fill_job& job, const std::uint64_t* add) {
  const auto n = static_cast<std::size_t>(job.cells);
  if (job.counts32) add_checked(job.counts32, add, n, threads_of(job));
  else add_checked(job.counts64, add, n, threads_of(job));
}

void merge_counts(std::uint32_t* destination, const std::uint32_t* add, std::size_t n) {
  add_checked(destination, add, n, omp_get_max_threads(), "merge");
}
void merge_counts(std::uint64_t* destination, const std::uint64_t* add, std::size_t n) {
  add_checked(destination, add, n, omp_get_max_threads(), "merge");
}

const backend_ops* find_backend(backend which) {
  for (const auto& b : backend_table())
    if (b.which == which) return &b;
  return nullptr;
}

}  // namespace detail

std::vector<backend_info> backends() {
  std::vector<backend_info> out;
  for (backend which : {backend::cpu, backend::cuda}) {
    backend_info info;
    info.which = which;
    if (const auto* ops = detail::find_backend(which)) {
      info.compiled = true;
      info.usable = ops->usable(info.detail);
    } else {
      info.detail = "not compiled in (configure with -DTALLY_CUDA=ON where nvcc is found)";
    }
    out.push_back(std::move(info));
  }
  return out;
}

bool describe_device(plan_request& request) {
  const auto* ops = detail::find_backend(request.where);
  std::string detail;
  if (!ops || !ops->usable(detail)) return false;
  if (ops->describe) ops->describe(request);
  return true;
}

std::string_view version() { return TALLY_VERSION; }

}  // namespace tally
