// Device memory for the GPU test files: a host column's copy on the device and a CUDA stream, each
// freed at the end of its scope; a CUDA status asserted successful.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "tally/tally.hpp"

namespace tally_test {

inline void check(cudaError_t status) { ASSERT_EQ(status, cudaSuccess) << cudaGetErrorString(status); }

/// A copy of a host column in device memory, at the host address modulo 16 (so that the
/// kernels' unaligned heads and tails take part), freed at the end.
class device_column {
 public:
  explicit device_column(const tally::view& v) : view_(v) {
    const std::size_t misalignment = reinterpret_cast<std::uintptr_t>(v.data) % 16;
    const std::size_t bytes = v.size ? static_cast<std::size_t>((v.size - 1) * v.stride + 1) * tally::size_of(v.type) : 0;
    check(cudaMalloc(&base_, misalignment + bytes + 1));
    view_.data = static_cast<char*>(base_) + misalignment;
    if (bytes) check(cudaMemcpy(const_cast<void*>(view_.data), v.data, bytes, cudaMemcpyHostToDevice));
  }
  ~device_column() { cudaFree(base_); }
  device_column(const device_column&) = delete;
  device_column& operator=(const device_column&) = delete;
  const tally::view& view() const { return view_; }

 private:
  void* base_ = nullptr;
  tally::view view_;
};

/// A CUDA stream of its own, destroyed at the end.
class stream {
 public:
  stream() { check(cudaStreamCreate(&s_)); }
  ~stream() { cudaStreamDestroy(s_); }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  void* get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

}  // namespace tally_test
