// The fixed cost of a small call on the GPU, step by step: what a one-shot fill of 16 samples
// (the Python package's call on a CUDA tensor) spends, beside the CUDA runtime's own floor (a
// memset and a kernel launch, what torch.histc enqueues): the host's time to enqueue a call, and
// the wall clock of many back-to-back calls on one stream (the GPU's share of each included).
//   tally_call_bench [calls]
#include <tally/tally.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>

#include "timing.cuh"

namespace {

__global__ void touch(unsigned long long* cells) {
  if (threadIdx.x == 0) cells[0] += 1;
}

struct call_cost {
  double host_us;  // enqueueing alone: 256 calls, fewer than the launch queue holds, before the wait
  double wall_us;  // back to back with the GPU's share: many calls, then the wait
};

call_cost cost_of(int calls, const std::function<void()>& call) {
  for (int i = 0; i < 200; ++i) call();
  CHECK(cudaDeviceSynchronize());
  constexpr int kQueued = 256;
  auto t = std::chrono::steady_clock::now();
  for (int i = 0; i < kQueued; ++i) call();
  const double host = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() / kQueued;
  CHECK(cudaDeviceSynchronize());
  t = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) call();
  CHECK(cudaDeviceSynchronize());
  return {host, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() / calls};
}

}  // namespace

int main(int argc, char** argv) {
  if (refuses_debug_build("tally_call_bench")) return 1;
  const int calls = argc > 1 ? std::atoi(argv[1]) : 20000;
  cudaStream_t s = nullptr;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  double* x = nullptr;
  unsigned long long* scratch = nullptr;
  CHECK(cudaMalloc(&x, 16 * sizeof(double)));
  CHECK(cudaMalloc(&scratch, 4096));
  double host[16];
  for (int i = 0; i < 16; ++i) host[i] = (i * 0.37) - static_cast<int>(i * 0.37);
  CHECK(cudaMemcpy(x, host, sizeof host, cudaMemcpyHostToDevice));
  const tally::view v = tally::make_view(x, 16);
  const tally::axis regular = tally::axis::regular(16, 0, 1);
  const tally::axis integer = tally::axis::integer(0, 16);
  void* stream = s;

  struct step {
    const char* name;
    std::function<void()> call;
  };
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::optional<tally::device_histogram> kept(std::in_place, regular, tally::options{}, stream);
  const step steps[] = {
      {"CUDA floor: cudaMemsetAsync + one kernel launch",
       [&] {
         CHECK(cudaMemsetAsync(scratch, 0, 128, s));
         touch<<<1, 32, 0, s>>>(scratch);
       }},
      {"cudaPointerGetAttributes", [&] {
         cudaPointerAttributes a;
         CHECK(cudaPointerGetAttributes(&a, x));
       }},
      {"cudaGetDevice + cudaSetDevice (the device guard)", [&] {
         int d = 0;
         CHECK(cudaGetDevice(&d));
         CHECK(cudaSetDevice(d));
       }},
      {"cudaEventCreate + record + destroy", [&] {
         cudaEvent_t ev = nullptr;
         CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
         CHECK(cudaEventRecord(ev, s));
         CHECK(cudaEventDestroy(ev));
       }},
      {"cudaMallocAsync + cudaFreeAsync (256 B)", [&] {
         void* p = nullptr;
         CHECK(cudaMallocAsync(&p, 256, s));
         CHECK(cudaFreeAsync(p, s));
       }},
      {"device_histogram(regular 16) constructed and destroyed",
       [&] { tally::device_histogram h(regular, {}, stream); }},
      {"device_histogram(integer 0..16) constructed and destroyed",
       [&] { tally::device_histogram h(integer, {}, stream); }},
      {"describe_device + plan (the planner's choice for the fill below)", [&] {
         tally::plan_request r;
         r.where = tally::backend::cuda;
         r.cells = 16;
         r.sample = tally::dtype::f64;
         r.n = 16;
         r.contiguous = true;
         r.table_bytes = 17 * sizeof(double);
         tally::describe_device(r);
         const tally::policy p = tally::plan(r);
         if (p.grid_blocks < 1) std::abort();
       }},
      {"fill of 16 f64 samples into a kept histogram", [&] { kept->fill(v, stream); }},
      {"one-shot: construct, fill, destroy", [&] {
         tally::device_histogram h(regular, {}, stream);
         h.fill(v, stream);
       }},
      {"one-shot as the Python call: + release_on_default_stream", [&] {
         tally::device_histogram h(regular, {}, stream);
         h.fill(v, stream);
         h.release_on_default_stream();
       }},
      {"the same on the legacy default stream (torch's default stream, handle 0)", [&] {
         tally::device_histogram h(regular, {}, nullptr);
         h.fill(v, nullptr);
         h.release_on_default_stream();
       }},
  };
  std::printf("16 samples; microseconds a call: host (enqueueing 256 calls) and wall (%d calls, then the wait)\n",
              calls);
  std::printf("    host      wall\n");
  for (const auto& st : steps) {
    const call_cost c = cost_of(calls, st.call);
    std::printf("%8.2f  %8.2f  %s\n", c.host_us, c.wall_us, st.name);
  }
  kept.reset();  // its memory is freed on `s`, before `s` is destroyed
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFree(x));
  CHECK(cudaFree(scratch));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
