// GPU benchmark of the parallel patterns, against CUB and cuBLAS in the same run: sigmoid (every
// tally::transform strategy and the library call), a + b[:, None], the reductions (sum, min, max,
// mean of a whole array, sums of rows), and SGEMM (TF32 off).
// Device-resident data, CUDA events after warm-up, median (bench/timing.cuh). Prints a table and
// writes JSON to argv[1] (default patterns_bench.json). torch anchors: bench/patterns_torch.py.
// `--sgemm-sweep [json]` times only SGEMM, warptiled with each of its tilings.
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "tally/patterns/elementwise.hpp"
#include "tally/patterns/matmul.hpp"
#include "tally/patterns/ops.hpp"
#include "tally/patterns/reduce.hpp"
#include "tally/patterns/transform.cuh"
#include "timing.cuh"

namespace {

#define CUBLAS_CHECK(expr)                                                        \
  do {                                                                            \
    if ((expr) != CUBLAS_STATUS_SUCCESS) {                                        \
      std::fprintf(stderr, "%s:%d %s failed\n", __FILE__, __LINE__, #expr);       \
      std::exit(2);                                                               \
    }                                                                             \
  } while (0)

/// The measured limits a GB/s figure is a fraction of: reading only (CUB's sum), or reading and
/// writing as much (a device-to-device copy).
enum class limit { none, read, copy };

struct row {
  std::string workload, who, unit;  // unit: GB/s, us or TFLOP/s
  double ms, value;
  limit of;
};

std::vector<row> rows;

void record(const std::string& workload, const std::string& who, const std::string& unit, double ms, double value,
            limit of = limit::none) {
  std::fprintf(stderr, "measured %s %s: %.4f ms, %.2f %s\n", workload.c_str(), who.c_str(), ms, value, unit.c_str());
  rows.push_back({workload, who, unit, ms, value, of});
}

/// Values in (-4, 4), never 0, from a hash of the index.
template <class T> __global__ void generate(T* out, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    const float v = ((h >> 8) + 0.5f) / 16777216.0f * 8.0f - 4.0f;
    out[i] = tally::detail::map::narrow<T>(v);
  }
}

template <class T> T* device_array(std::size_t n, std::uint32_t seed) {
  T* p;
  CHECK(cudaMalloc(&p, n * sizeof(T)));
  generate<<<1024, 256>>>(p, n, seed);
  CHECK(cudaGetLastError());
  return p;
}

/// Every activation over 2^28 elements of T through tally::unary: GB/s of bytes read and written
/// (workloads "<op> <type> 2^28"; torch's rows come from patterns_torch.py).
template <class T> void activations(const char* type_name) {
  const std::size_t n = std::size_t{1} << 28;
  T* x = device_array<T>(n, 2);
  T* y;
  CHECK(cudaMalloc(&y, n * sizeof(T)));
  const double gb = 2.0 * n * sizeof(T) / 1e9;
  using op = tally::unary_op;
  for (op o : {op::sigmoid, op::silu, op::gelu_tanh, op::gelu_erf, op::tanh, op::relu}) {
    const double ms = median_ms([&] { tally::unary(o, tally::dtype_of<T>, x, y, static_cast<std::int64_t>(n)); });
    record(std::string(tally::name_of(o)) + " " + type_name + " 2^28", "tally::unary", "GB/s", ms, gb / ms * 1e3,
           limit::copy);
  }
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
}

/// Sigmoid over n elements of T: every strategy of the generic transform with the accurate
/// functor (ops::sigmoid), then of the library call (tally::unary, which for 16-bit types
/// computes a fast estimate and rounds it exactly), then tally::sigmoid; GB/s of bytes read and
/// written.
template <class T> void sigmoid_ladder(const std::string& workload, std::size_t n) {
  T* x = device_array<T>(n, 1);
  T* y;
  CHECK(cudaMalloc(&y, n * sizeof(T)));
  const double gb = 2.0 * n * sizeof(T) / 1e9;
  const auto count = static_cast<std::int64_t>(n);
  auto strategy = [&](auto s, const char* name) {
    constexpr tally::map_strategy S = decltype(s)::value;
    double ms = median_ms([&] { tally::transform<S>(nullptr, count, y, tally::ops::sigmoid{}, x); });
    record(workload, std::string("transform ") + name, "GB/s", ms, gb / ms * 1e3, limit::copy);
    tally::unary_options o;
    o.strategy = S;
    ms = median_ms([&] { tally::unary(tally::unary_op::sigmoid, tally::dtype_of<T>, x, y, count, o); });
    record(workload, std::string("tally::unary ") + name, "GB/s", ms, gb / ms * 1e3, limit::copy);
  };
  using S = tally::map_strategy;
  strategy(std::integral_constant<S, S::scalar>{}, "scalar");
  strategy(std::integral_constant<S, S::x2>{}, "x2");
  strategy(std::integral_constant<S, S::x4>{}, "x4");
  strategy(std::integral_constant<S, S::x8>{}, "x8");
  strategy(std::integral_constant<S, S::packed128>{}, "packed128");
  strategy(std::integral_constant<S, S::packed128_resident>{}, "packed128_resident");
  const double ms = median_ms([&] { tally::sigmoid(x, y, count); });
  record(workload, "tally::sigmoid", "GB/s", ms, gb / ms * 1e3, limit::copy);
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
}

/// Sigmoid over side^2 f32 in microseconds: tally::sigmoid, and the packed transform on its own
/// grid and on the resident one.
void sigmoid_small(std::size_t side) {
  const std::size_t n = side * side;
  float* x = device_array<float>(n, 2);
  float* y;
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  const auto count = static_cast<std::int64_t>(n);
  const std::string workload = "sigmoid f32 " + std::to_string(side) + "^2";
  using S = tally::map_strategy;
  double ms = median_ms([&] { tally::transform<S::packed128>(nullptr, count, y, tally::ops::sigmoid{}, x); });
  record(workload, "transform packed128", "us", ms, ms * 1e3);
  ms = median_ms([&] { tally::transform<S::packed128_resident>(nullptr, count, y, tally::ops::sigmoid{}, x); });
  record(workload, "transform packed128_resident", "us", ms, ms * 1e3);
  ms = median_ms([&] { tally::sigmoid(x, y, count); });
  record(workload, "tally::sigmoid", "us", ms, ms * 1e3);
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
}

void broadcast_add() {
  const std::int64_t side = 16384;
  const std::size_t n = static_cast<std::size_t>(side * side);
  float* a = device_array<float>(n, 3);
  float* b = device_array<float>(static_cast<std::size_t>(side), 4);
  float* out;
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  const double gb = (2.0 * n + side) * sizeof(float) / 1e9;
  const double ms = median_ms([&] {
    tally::add(tally::make_array(a, {side, side}), tally::make_array(b, {side, 1}), tally::make_out_array(out, {side, side}));
  });
  record("a + b[:, None] f32 16384^2", "tally::add", "GB/s", ms, gb / ms * 1e3, limit::copy);
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(out));
}

/// Sum of 2^28 f32: CUB DeviceReduce::Sum first (its GB/s is the read bandwidth of the table).
double sums() {
  const std::size_t n = std::size_t{1} << 28;
  float* x = device_array<float>(n, 5);
  float* out;
  double* out64;
  CHECK(cudaMalloc(&out, sizeof(float)));
  CHECK(cudaMalloc(&out64, sizeof(double)));
  const double gb = n * sizeof(float) / 1e9;
  std::size_t temp_bytes = 0;
  cub::DeviceReduce::Sum(nullptr, temp_bytes, x, out, static_cast<int>(n));
  void* temp;
  CHECK(cudaMalloc(&temp, temp_bytes));
  const double cub_ms = median_ms([&] { cub::DeviceReduce::Sum(temp, temp_bytes, x, out, static_cast<int>(n)); });
  record("sum f32 2^28", "cub", "GB/s", cub_ms, gb / cub_ms * 1e3, limit::read);
  const auto count = static_cast<std::int64_t>(n);
  double ms = median_ms([&] { tally::reduce(tally::reduce_op::sum, tally::dtype::f32, x, count, tally::dtype::f32, out); });
  record("sum f32 2^28", "tally::reduce f32", "GB/s", ms, gb / ms * 1e3, limit::read);
  ms = median_ms([&] { tally::reduce(tally::reduce_op::sum, tally::dtype::f32, x, count, tally::dtype::f64, out64); });
  record("sum f32 2^28", "tally::reduce f64 acc", "GB/s", ms, gb / ms * 1e3, limit::read);
  // Same bits on every run: two more sums compared with the last.
  float first = 0, again = 0;
  tally::reduce(tally::reduce_op::sum, tally::dtype::f32, x, count, tally::dtype::f32, out);
  CHECK(cudaMemcpy(&first, out, sizeof first, cudaMemcpyDeviceToHost));
  tally::reduce(tally::reduce_op::sum, tally::dtype::f32, x, count, tally::dtype::f32, out);
  CHECK(cudaMemcpy(&again, out, sizeof again, cudaMemcpyDeviceToHost));
  std::printf("sum f32 2^28: %.9g, again %.9g (%s)\n", first, again, first == again ? "same bits" : "DIFFERENT");
  CHECK(cudaFree(temp));

  // min and max against CUB's; mean (CUB has none) against CUB's sum above.
  const auto cub_extreme = [&](const char* workload, bool minimum, tally::reduce_op op) {
    std::size_t bytes = 0;
    if (minimum) cub::DeviceReduce::Min(nullptr, bytes, x, out, static_cast<int>(n));
    else cub::DeviceReduce::Max(nullptr, bytes, x, out, static_cast<int>(n));
    void* scratch;
    CHECK(cudaMalloc(&scratch, bytes));
    const double cms = median_ms([&] {
      if (minimum) cub::DeviceReduce::Min(scratch, bytes, x, out, static_cast<int>(n));
      else cub::DeviceReduce::Max(scratch, bytes, x, out, static_cast<int>(n));
    });
    record(workload, "cub", "GB/s", cms, gb / cms * 1e3, limit::read);
    CHECK(cudaFree(scratch));
    const double tms = median_ms([&] { tally::reduce(op, tally::dtype::f32, x, count, tally::dtype::f32, out); });
    record(workload, "tally::reduce", "GB/s", tms, gb / tms * 1e3, limit::read);
  };
  cub_extreme("min f32 2^28", true, tally::reduce_op::min);
  cub_extreme("max f32 2^28", false, tally::reduce_op::max);
  ms = median_ms([&] { tally::reduce(tally::reduce_op::mean, tally::dtype::f32, x, count, tally::dtype::f32, out); });
  record("mean f32 2^28", "tally::reduce", "GB/s", ms, gb / ms * 1e3, limit::read);

  // Sums of the 16384 rows of a 16384 x 16384 matrix (the same 2^28 elements) against CUB's
  // segmented sum.
  const int side = 16384;
  float* row_sums;
  CHECK(cudaMalloc(&row_sums, side * sizeof(float)));
  std::vector<int> host_offsets(side + 1);
  for (int r = 0; r <= side; ++r) host_offsets[static_cast<std::size_t>(r)] = r * side;
  int* offsets;
  CHECK(cudaMalloc(&offsets, host_offsets.size() * sizeof(int)));
  CHECK(cudaMemcpy(offsets, host_offsets.data(), host_offsets.size() * sizeof(int), cudaMemcpyHostToDevice));
  std::size_t seg_bytes = 0;
  cub::DeviceSegmentedReduce::Sum(nullptr, seg_bytes, x, row_sums, side, offsets, offsets + 1);
  void* seg_temp;
  CHECK(cudaMalloc(&seg_temp, seg_bytes));
  ms = median_ms([&] { cub::DeviceSegmentedReduce::Sum(seg_temp, seg_bytes, x, row_sums, side, offsets, offsets + 1); });
  record("sum rows f32 16384^2", "cub", "GB/s", ms, gb / ms * 1e3, limit::read);
  ms = median_ms([&] {
    tally::reduce_rows(tally::reduce_op::sum, tally::dtype::f32, x, side, side, side, tally::dtype::f32, row_sums);
  });
  record("sum rows f32 16384^2", "tally::reduce_rows", "GB/s", ms, gb / ms * 1e3, limit::read);
  CHECK(cudaFree(seg_temp));
  CHECK(cudaFree(offsets));
  CHECK(cudaFree(row_sums));
  CHECK(cudaFree(x));
  CHECK(cudaFree(out));
  CHECK(cudaFree(out64));
  return gb / cub_ms * 1e3;
}

/// A device-to-device copy of 1 GiB: the read + write bandwidth, GB/s of bytes read and written.
double copy_bandwidth() {
  const std::size_t bytes = std::size_t{1} << 30;
  void *from, *to;
  CHECK(cudaMalloc(&from, bytes));
  CHECK(cudaMalloc(&to, bytes));
  CHECK(cudaMemset(from, 1, bytes));
  const double ms = median_ms([&] { CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice)); });
  const double gbs = 2.0 * bytes / 1e9 / ms * 1e3;
  record("copy 1 GiB", "cudaMemcpy", "GB/s", ms, gbs, limit::copy);
  CHECK(cudaFree(from));
  CHECK(cudaFree(to));
  return gbs;
}

/// Prints the table of every recorded row and writes it as JSON to `out`.
void report(const std::string& out, const cudaDeviceProp& prop, double read_gbs, double copy_gbs) {
  std::printf("device %s; read bandwidth %.0f GB/s (CUB DeviceReduce::Sum over 1 GiB of f32), copy %.0f GB/s "
              "(bytes read + written)\n", prop.name, read_gbs, copy_gbs);
  std::printf("%-28s %-26s %10s %12s %8s\n", "workload", "who", "ms", "value", "of limit");
  std::ofstream json(out);
  json << "{\"device\":\"" << prop.name << "\",\"read_gbs\":" << read_gbs << ",\"copy_gbs\":" << copy_gbs
       << ",\"rows\":[";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const double bound = r.of == limit::read ? read_gbs : r.of == limit::copy ? copy_gbs : 0;
    std::printf("%-28s %-26s %10.4f %8.2f %-7s", r.workload.c_str(), r.who.c_str(), r.ms, r.value, r.unit.c_str());
    if (bound > 0) std::printf(" %5.1f%% of %s", 100 * r.value / bound, r.of == limit::read ? "read" : "copy");
    std::printf("\n");
    json << (i ? "," : "") << "{\"workload\":\"" << r.workload << "\",\"who\":\"" << r.who << "\",\"ms\":" << r.ms
         << ",\"" << (r.unit == "us" ? "us" : r.unit == "GB/s" ? "gbs" : "tflops") << "\":" << r.value;
    if (bound > 0) json << ",\"of_bandwidth\":" << r.value / bound;
    json << "}";
  }
  json << "]}\n";
}

/// The largest |c - ref| over the largest |ref|, both n floats on the device; infinite where c
/// has a NaN.
double relative_error(const float* c, const float* ref, std::size_t n) {
  std::vector<float> hc(n), hr(n);
  CHECK(cudaMemcpy(hc.data(), c, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hr.data(), ref, n * sizeof(float), cudaMemcpyDeviceToHost));
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(hc[i]) - hr[i]);
    diff = std::isnan(d) ? HUGE_VAL : std::max(diff, d);
    scale = std::max(scale, static_cast<double>(std::fabs(hr[i])));
  }
  return diff / scale;
}

/// SGEMM size^3 by cuBLAS, then by each of tally's `runs` (a name and options): each run's
/// result is checked against cuBLAS's before it is timed. A relative error above 1e-4 (f32
/// roundings differ by ~1e-6 here) marks the run WRONG and makes the benchmark fail.
bool sgemm(cublasHandle_t handle, int size, const std::vector<std::pair<std::string, tally::matmul_options>>& runs) {
  const std::size_t n = static_cast<std::size_t>(size) * size;
  float* a = device_array<float>(n, 6);
  float* b = device_array<float>(n, 7);
  float *c, *ref;
  CHECK(cudaMalloc(&c, n * sizeof(float)));
  CHECK(cudaMalloc(&ref, n * sizeof(float)));
  const double flops = 2.0 * size * size * static_cast<double>(size);
  const std::string workload = "sgemm " + std::to_string(size) + "^3";
  const float one = 1, zero = 0;
  // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS gets B first.
  const double cublas_ms = median_ms([&] {
    CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &one, b, size, a, size, &zero, ref, size));
  });
  record(workload, "cublas (fp32, TF32 off)", "TFLOP/s", cublas_ms, flops / cublas_ms / 1e9);
  bool right = true;
  for (const auto& run : runs) {
    const std::string& who = run.first;
    const tally::matmul_options& options = run.second;
    CHECK(cudaMemset(c, 0xff, n * sizeof(float)));  // NaNs: a kernel that skips outputs cannot pass
    tally::matmul(a, b, c, size, size, size, options);
    const double error = relative_error(c, ref, n);
    const bool wrong = !(error <= 1e-4);
    right = right && !wrong;
    std::printf("%s %s: max |tally - cublas| / max |cublas| = %.3g%s\n", workload.c_str(), who.c_str(), error,
                wrong ? " WRONG" : "");
    const double ms = median_ms([&] { tally::matmul(a, b, c, size, size, size, options); });
    record(workload, who, "TFLOP/s", ms, flops / ms / 1e9);
    std::printf("%s %s: %.1f%% of cuBLAS\n", workload.c_str(), who.c_str(), 100 * cublas_ms / ms);
  }
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  CHECK(cudaFree(ref));
  return right;
}

/// The SGEMM runs: warptiled (its default tiling) and the older kernels; with `sweep`, warptiled
/// with every tiling instead, named by its index (cuda_matmul_default_tiling picks one).
std::vector<std::pair<std::string, tally::matmul_options>> sgemm_runs(bool sweep, bool naive) {
  std::vector<std::pair<std::string, tally::matmul_options>> runs;
  const auto add = [&](const std::string& who, tally::matmul_strategy s, int tiling) {
    tally::matmul_options o;
    o.strategy = s;
    o.tiling = tiling;
    runs.emplace_back(who, o);
  };
  if (sweep) {
    const auto& tilings = tally::matmul_tilings();
    for (std::size_t t = 0; t < tilings.size(); ++t)
      add("warptiled #" + std::to_string(t) + " " + tally::name_of(tilings[t]), tally::matmul_strategy::warptiled,
          static_cast<int>(t));
  } else {
    add("tally warptiled", tally::matmul_strategy::warptiled, -1);
  }
  add("tally blocked128", tally::matmul_strategy::blocked128, -1);
  if (naive && !sweep) add("tally tiled16 (textbook)", tally::matmul_strategy::tiled16, -1);
  return runs;
}

/// cuBLAS and tally on SGEMM 4096^3 and 8192^3 (sgemm_runs); false where a result is wrong.
bool sgemms(bool sweep) {
  // fp32 throughout: the default mode keeps at least f32's bits (no TF32), and stays cuBLAS's fastest
  // such mode (the pedantic one may pick slower kernels, which would flatter tally).
  if (std::getenv("NVIDIA_TF32_OVERRIDE")) {
    std::fprintf(stderr, "patterns_bench: NVIDIA_TF32_OVERRIDE is set; unset it to compare fp32 with fp32\n");
    std::exit(1);
  }
  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));
  CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  std::printf("warptiled's default tiling: %s\n",
              tally::name_of(tally::matmul_tilings()[static_cast<std::size_t>(tally::matmul_default_tiling())]).c_str());
  bool right = sgemm(handle, 4096, sgemm_runs(sweep, true));
  right = sgemm(handle, 8192, sgemm_runs(sweep, false)) && right;
  CUBLAS_CHECK(cublasDestroy(handle));
  if (!right) std::fprintf(stderr, "patterns_bench: an SGEMM result differs from cuBLAS's (WRONG above)\n");
  return right;
}

}  // namespace

int main(int argc, char** argv) {
#ifndef NDEBUG
  std::fprintf(stderr, "patterns_bench: a debug build; configure with -DCMAKE_BUILD_TYPE=Release\n");
  return 1;
#endif
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  // --sgemm-sweep [json]: only SGEMM, warptiled with every tiling (under a minute on an H100).
  if (argc > 1 && std::string(argv[1]) == "--sgemm-sweep") {
    const bool right = sgemms(true);
    report(argc > 2 ? argv[2] : "patterns_sgemm_sweep.json", prop, 0, 0);
    return right ? 0 : 1;
  }
  const std::string out = argc > 1 ? argv[1] : "patterns_bench.json";
  const double copy_gbs = copy_bandwidth();
  const double read_gbs = sums();
  sigmoid_ladder<float>("sigmoid f32 2^28", std::size_t{1} << 28);
  sigmoid_ladder<tally::half>("sigmoid f16 2^28", std::size_t{1} << 28);
  activations<float>("f32");
  activations<tally::half>("f16");
  activations<tally::bfloat16>("bf16");
  sigmoid_small(1024);
  sigmoid_small(4096);
  broadcast_add();
  const bool right = sgemms(false);
  report(out, prop, read_gbs, copy_gbs);
  return right ? 0 : 1;
}
