// tally/nccl.hpp: device histograms reduced across GPUs with NCCL. NCCL's functions are looked up
// in the process at run time (nccl_api), so that linking tally adds no NCCL dependency and the
// calls reach the NCCL that made the caller's communicator.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "core/exact_sum.hpp"
#include "cuda/common.cuh"
#include "cuda/fill.hpp"
#include "tally/nccl.hpp"

namespace tally {
namespace {

using detail::cuda::device_guard;

/// The NCCL functions tally calls, found once: in the process's global symbols (a program linked
/// with NCCL), else in a libnccl.so.2 already loaded by another library (torch's), else by
/// loading libnccl.so.2 from the loader's path or the library CMake found. `missing` says why
/// they could not be found; empty where they were.
struct nccl_api {
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclGetLastError) last_error = nullptr;  // NCCL >= 2.13; optional
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclReduce) reduce = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclCommCount) comm_count = nullptr;
  decltype(&ncclCommCuDevice) comm_device = nullptr;
  decltype(&ncclCommUserRank) comm_rank = nullptr;
  std::string missing;
};

nccl_api load_nccl() {
  nccl_api api;
  void* library = RTLD_DEFAULT;
  bool found = dlsym(RTLD_DEFAULT, "ncclAllReduce") != nullptr;
  for (const int flags : {RTLD_NOW | RTLD_NOLOAD, RTLD_NOW | RTLD_LOCAL}) {
    for (const char* name : {"libnccl.so.2", TALLY_NCCL_LIBRARY}) {
      if (found) break;
      if (void* handle = dlopen(name, flags)) {  // kept loaded for the process's lifetime
        library = handle;
        found = true;
      }
    }
  }
  if (!found) {
    api.missing = "NCCL is not loaded in this process and libnccl.so.2 was not found (nor " TALLY_NCCL_LIBRARY ")";
    return api;
  }
  const auto find = [&](auto& function, const char* name, bool required) {
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(dlsym(library, name));
    if (!function && required && api.missing.empty()) api.missing = std::string("NCCL has no ") + name;
  };
  find(api.error_string, "ncclGetErrorString", true);
  find(api.last_error, "ncclGetLastError", false);
  find(api.all_reduce, "ncclAllReduce", true);
  find(api.reduce, "ncclReduce", true);
  find(api.group_start, "ncclGroupStart", true);
  find(api.group_end, "ncclGroupEnd", true);
  find(api.comm_count, "ncclCommCount", true);
  find(api.comm_device, "ncclCommCuDevice", true);
  find(api.comm_rank, "ncclCommUserRank", true);
  return api;
}

/// The NCCL functions, or tally::error naming `what` where NCCL is not to be found.
const nccl_api& nccl(const std::string& what) {
  static const nccl_api api = load_nccl();
  if (!api.missing.empty()) throw error(what + ": " + api.missing);
  return api;
}

/// Throws tally::error with NCCL's message (and its last error's detail) unless the call
/// succeeded or, on a non-blocking communicator, is still being enqueued.
void check(ncclResult_t status, ncclComm* comm, const std::string& what) {
  if (status == ncclSuccess || status == ncclInProgress) return;
  const nccl_api& api = nccl(what);
  std::string message = what + ": NCCL error: " + api.error_string(status);
  if (api.last_error) {
    const char* detail = api.last_error(comm);
    if (detail && *detail) message += std::string(" (") + detail + ")";
  }
  throw error(message);
}

/// Rejects a null communicator and one of another device than the histogram's.
void require_comm(const device_histogram& h, ncclComm* comm, const std::string& what) {
  if (!comm) throw error(what + ": the communicator is null");
  int device = -1;
  check(nccl(what).comm_device(comm, &device), comm, what);
  if (device != h.device()) {
    throw error(what + ": the histogram is on device " + std::to_string(h.device()) +
                " but the communicator on device " + std::to_string(device));
  }
}

/// ncclGroupStart, and ncclGroupEnd by end() or, where an error left the group open, at scope
/// exit (the error is already being thrown; the group must still close).
class nccl_group {
 public:
  explicit nccl_group(const std::string& what) : what_(what) { check(nccl(what_).group_start(), nullptr, what_); }
  ~nccl_group() {
    if (open_) nccl(what_).group_end();
  }
  nccl_group(const nccl_group&) = delete;
  nccl_group& operator=(const nccl_group&) = delete;
  void end() {
    open_ = false;
    check(nccl(what_).group_end(), nullptr, what_);
  }

 private:
  std::string what_;
  bool open_ = true;
};

/// options::exact_sums: the cells' exact words travel as digits that NCCL's u64 sum adds without
/// carries (core/exact_sum.hpp). Made before the collective is enqueued: the words split into
/// digits, in memory from the histogram's allocator, on `stream`; finish() carries the summed
/// digits back into the words and rounds the sums. Inactive (no memory, no work) for other
/// histograms.
class exact_digits {
 public:
  exact_digits(device_histogram& h, void* stream)
      : h_(h), stream_(static_cast<cudaStream_t>(stream)), wide_(detail::device_cells::wide(h)) {
    if (!wide_) return;
    const device_guard guard(h.device());
    digits_ = static_cast<std::uint64_t*>(detail::device_cells::allocate(h, bytes(), stream_));
    detail::cuda::split_wide(wide_, h.size(), digits_, stream_);
  }
  ~exact_digits() {
    if (!digits_) return;
    const device_guard guard(h_.device());
    try {
      detail::device_cells::deallocate(h_, digits_, bytes(), stream_);
    } catch (const error&) {
      // A destructor cannot throw; the CUDA error stays for the caller's next call to report.
    }
  }
  exact_digits(const exact_digits&) = delete;
  exact_digits& operator=(const exact_digits&) = delete;
  exact_digits(exact_digits&& other) noexcept : h_(other.h_), stream_(other.stream_), wide_(other.wide_), digits_(other.digits_) {
    other.digits_ = nullptr;
  }
  exact_digits& operator=(exact_digits&&) = delete;

  std::uint64_t* digits() const { return digits_; }
  std::size_t bytes() const { return static_cast<std::size_t>(h_.size()) * detail::kWideDigits * sizeof(std::uint64_t); }
  /// After the collective, on a rank that received the sums.
  void finish() const {
    if (!digits_) return;
    const device_guard guard(h_.device());
    detail::cuda::join_wide(digits_, h_.size(), wide_, stream_);
    detail::cuda::round_wide(wide_, h_.size(), const_cast<double*>(h_.sums_data()), stream_);
  }

 private:
  device_histogram& h_;
  cudaStream_t stream_;
  std::uint64_t* wide_;
  std::uint64_t* digits_ = nullptr;
};

/// Calls enqueue(buffer, elements, type) for the cells (u64 counts, f64 sums, or exact sums'
/// digits) and, with options::flow, the three flow counters. The memory is the histogram's own:
/// counts_data() and the others are const only so that readers cannot write by mistake.
template <class Enqueue>
void for_each_buffer(device_histogram& h, const exact_digits& exact, Enqueue&& enqueue) {
  const auto cells = static_cast<std::size_t>(h.size());
  if (exact.digits()) {
    enqueue(exact.digits(), cells * detail::kWideDigits, ncclUint64);
  } else if (h.weighted()) {
    enqueue(const_cast<double*>(h.sums_data()), cells, ncclFloat64);
  } else {
    enqueue(const_cast<std::uint64_t*>(h.counts_data()), cells, ncclUint64);
  }
  if (h.opts().flow) enqueue(const_cast<std::uint64_t*>(h.flow_data()), std::size_t{3}, ncclUint64);
}

/// Enqueues the all-reduce of h's buffers on `stream`, for a caller that opened a group.
void enqueue_all_reduce(device_histogram& h, const exact_digits& exact, ncclComm* comm, void* stream,
                        const std::string& what) {
  const device_guard guard(h.device());
  const nccl_api& api = nccl(what);
  for_each_buffer(h, exact, [&](void* cells, std::size_t n, ncclDataType_t type) {
    check(api.all_reduce(cells, cells, n, type, ncclSum, comm, static_cast<cudaStream_t>(stream)), comm, what);
  });
}

/// FNV-1a over what makes two histograms' cells line up: options and every axis's kind, bins and
/// edges (as f64).
std::uint64_t layout_fingerprint(const device_histogram& h) {
  std::uint64_t hash = 14695981039346656037ull;
  const auto add = [&](std::uint64_t word) {
    for (int byte = 0; byte < 8; ++byte) hash = (hash ^ ((word >> (8 * byte)) & 0xff)) * 1099511628211ull;
  };
  add(h.weighted());
  add(h.opts().exact_sums);
  add(h.opts().flow);
  add(h.axes().size());
  for (const axis& a : h.axes()) {
    add(static_cast<std::uint64_t>(a.kind()));
    add(static_cast<std::uint64_t>(a.bins()));
    for (const double e : a.edges()) {
      std::uint64_t bits;
      std::memcpy(&bits, &e, sizeof bits);
      add(bits);
    }
  }
  return hash;
}

}  // namespace

bool nccl_available() { return true; }

void all_reduce(device_histogram& h, ncclComm* comm, void* stream) {
  require_comm(h, comm, "all_reduce");
  const exact_digits exact(h, stream);
  nccl_group group("all_reduce");  // the cells and the flow counters in one launch
  enqueue_all_reduce(h, exact, comm, stream, "all_reduce");
  group.end();
  exact.finish();
}

void reduce(device_histogram& h, int root, ncclComm* comm, void* stream) {
  require_comm(h, comm, "reduce");
  const nccl_api& api = nccl("reduce");
  int ranks = 0;
  check(api.comm_count(comm, &ranks), comm, "reduce");
  if (root < 0 || root >= ranks) {
    throw error("reduce: root " + std::to_string(root) + " is not a rank of the communicator (0 to " +
                std::to_string(ranks - 1) + ")");
  }
  int rank = 0;
  check(api.comm_rank(comm, &rank), comm, "reduce");
  const device_guard guard(h.device());
  const exact_digits exact(h, stream);
  nccl_group group("reduce");
  for_each_buffer(h, exact, [&](void* cells, std::size_t n, ncclDataType_t type) {
    check(api.reduce(cells, cells, n, type, ncclSum, root, comm, static_cast<cudaStream_t>(stream)), comm, "reduce");
  });
  group.end();
  if (rank == root) exact.finish();
}

void check_same_layout(const device_histogram& h, ncclComm* comm, void* stream) {
  const std::string what = "check_same_layout";
  require_comm(h, comm, what);
  const device_guard guard(h.device());
  // Every rank equal <=> max(fingerprint) and max(~fingerprint) are this rank's: one all-reduce.
  const std::uint64_t mine = layout_fingerprint(h);
  const std::uint64_t words[2] = {mine, ~mine};
  std::uint64_t* device_words = nullptr;
  TALLY_CUDA_CHECK(cudaMalloc(&device_words, sizeof words));
  const std::unique_ptr<std::uint64_t, decltype(&cudaFree)> owner(device_words, &cudaFree);
  TALLY_CUDA_CHECK(cudaMemcpy(device_words, words, sizeof words, cudaMemcpyHostToDevice));
  const auto s = static_cast<cudaStream_t>(stream);
  check(nccl(what).all_reduce(device_words, device_words, 2, ncclUint64, ncclMax, comm, s), comm, what);
  std::uint64_t most[2] = {};
  TALLY_CUDA_CHECK(cudaMemcpyAsync(most, device_words, sizeof most, cudaMemcpyDeviceToHost, s));
  TALLY_CUDA_CHECK(cudaStreamSynchronize(s));
  if (most[0] != mine || ~most[1] != mine) {
    throw error(what + ": the ranks' histograms differ in axes (kinds, bins or edges) or options (weighted, "
                       "exact_sums, flow); their cells cannot be summed");
  }
}

void sharded_fill(std::vector<device_histogram>& per_device, const std::vector<view>& shards,
                  const std::vector<ncclComm*>& comms, const std::vector<void*>& streams,
                  const std::vector<view>& weights) {
  const std::string what = "sharded_fill";
  nccl(what);
  const std::size_t n = per_device.size();
  if (n == 0) throw error(what + ": no histograms");
  if (shards.size() != n || comms.size() != n || streams.size() != n || (!weights.empty() && weights.size() != n)) {
    throw error(what + ": " + std::to_string(n) + " histograms need as many shards, communicators and streams (and "
                "weights, where given); got " + std::to_string(shards.size()) + ", " + std::to_string(comms.size()) +
                ", " + std::to_string(streams.size()) + " and " + std::to_string(weights.size()));
  }
  for (std::size_t i = 0; i < n; ++i) {
    const device_histogram& h = per_device[i];
    if (h.axes() != per_device[0].axes() || h.weighted() != per_device[0].weighted() ||
        h.opts().exact_sums != per_device[0].opts().exact_sums || h.opts().flow != per_device[0].opts().flow) {
      throw error(what + ": histogram " + std::to_string(i) +
                  " differs from histogram 0 in axes or options (weighted, exact_sums, flow); their cells cannot be "
                  "summed");
    }
    require_comm(h, comms[i], what);
  }
  // A fill that throws leaves the shards before it filled and nothing reduced.
  for (std::size_t i = 0; i < n; ++i) {
    if (weights.empty()) {
      per_device[i].fill(shards[i], streams[i]);
    } else {
      per_device[i].fill(shards[i], weights[i], streams[i]);
    }
  }
  std::vector<exact_digits> exact;
  exact.reserve(n);
  for (std::size_t i = 0; i < n; ++i) exact.emplace_back(per_device[i], streams[i]);
  nccl_group group(what);  // one process, several devices: their all-reduces in one group
  for (std::size_t i = 0; i < n; ++i) enqueue_all_reduce(per_device[i], exact[i], comms[i], streams[i], what);
  group.end();
  for (const exact_digits& e : exact) e.finish();
}

}  // namespace tally
