// The fixed cost of a small call on the GPU, step by step: what a one-shot fill of 16 samples
// (the Python package's call on a CUDA tensor) spends on the host, beside the CUDA runtime's own
// floor (a memset and a kernel launch, what torch.histc enqueues). Host wall clock over many
// back-to-back calls on one stream, the stream synchronised at the end; microseconds a call.
//   tally_call_bench [calls]
#include <tally/tally.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "timing.cuh"

namespace {

__global__ void touch(unsigned long long* cells) {
  if (threadIdx.x == 0) cells[0] += 1;
}

double us_per_call(int calls, cudaStream_t s, const std::function<void()>& call) {
  for (int i = 0; i < 200; ++i) call();
  CHECK(cudaStreamSynchronize(s));
  const auto t = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) call();
  CHECK(cudaStreamSynchronize(s));
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() / calls;
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
  tally::device_histogram kept(regular, {}, stream);
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
      {"fill of 16 f64 samples into a kept histogram", [&] { kept.fill(v, stream); }},
      {"one-shot: construct, fill, destroy", [&] {
         tally::device_histogram h(regular, {}, stream);
         h.fill(v, stream);
       }},
      {"one-shot as the Python call: + release_on_default_stream", [&] {
         tally::device_histogram h(regular, {}, stream);
         h.fill(v, stream);
         h.release_on_default_stream();
       }},
  };
  std::printf("%d calls each, 16 samples, host wall clock a call\n", calls);
  for (const auto& st : steps) std::printf("%8.2f us  %s\n", us_per_call(calls, s, st.call), st.name);
  CHECK(cudaFree(x));
  CHECK(cudaFree(scratch));
  CHECK(cudaStreamDestroy(s));
  return 0;
}
