// device_histogram in a build without the CUDA backend: constructing one says so. No object can
// exist, so the other members are never reached; they are defined for the linker alone.
#include "tally/device.hpp"

namespace tally {
namespace {

[[noreturn]] void unavailable() {
  throw error("device_histogram: the CUDA backend is not compiled into this build of tally "
              "(configure with -DTALLY_CUDA=ON where nvcc is found)");
}

}  // namespace

struct device_histogram::state {};

device_histogram::device_histogram(axis, options, void*, device_allocator) { unavailable(); }
device_histogram::device_histogram(std::vector<axis>, options, void*, device_allocator) { unavailable(); }
device_histogram::~device_histogram() = default;
device_histogram::device_histogram(device_histogram&&) noexcept = default;
device_histogram& device_histogram::operator=(device_histogram&&) noexcept = default;
void device_histogram::fill(const view&, void*) { unavailable(); }
void device_histogram::fill(const view&, const view&, void*) { unavailable(); }
void device_histogram::fill(const std::vector<view>&, void*) { unavailable(); }
void device_histogram::fill(const std::vector<view>&, const view&, void*) { unavailable(); }
void device_histogram::fill_impl(const std::vector<view>&, const view*, void*) { unavailable(); }
void device_histogram::fill_from_host(const view&, void*, stream_options) { unavailable(); }
void device_histogram::fill_from_host(const view&, const view&, void*, stream_options) { unavailable(); }
void device_histogram::fill_from_host(const std::vector<view>&, void*, stream_options) { unavailable(); }
void device_histogram::fill_from_host(const std::vector<view>&, const view&, void*, stream_options) { unavailable(); }
void device_histogram::from_host_impl(const std::vector<view>&, const view*, void*, const stream_options&) { unavailable(); }
void device_histogram::fill_stream(dtype, const stream_reader&, void*, stream_options) { unavailable(); }
void device_histogram::fill_stream(dtype, const stream_reader&, dtype, const stream_reader&, void*, stream_options) {
  unavailable();
}
void device_histogram::stream_impl(dtype, const stream_reader&, const stream_reader*, dtype, void*,
                                   const stream_options&) {
  unavailable();
}
void device_histogram::reset(void*) { unavailable(); }
void device_histogram::release_on_default_stream() { unavailable(); }
std::vector<std::int64_t> device_histogram::shape() const { unavailable(); }
const std::uint64_t* device_histogram::counts_data() const { unavailable(); }
const double* device_histogram::sums_data() const { unavailable(); }
const std::uint64_t* device_histogram::flow_data() const { unavailable(); }
std::vector<std::uint64_t> device_histogram::counts(void*) const { unavailable(); }
std::vector<double> device_histogram::sums(void*) const { unavailable(); }
flow_counts device_histogram::flow(void*) const { unavailable(); }
policy device_histogram::plan_for(dtype, std::int64_t, dtype) const { unavailable(); }
void fill_channels(std::vector<device_histogram>&, const view&, int, void*) { unavailable(); }
void count_into(std::vector<axis>, const std::vector<view>&, void*, dtype, void*, options) { unavailable(); }
bool count_into_if_one_launch(const std::vector<axis>&, const std::vector<view>&, const std::function<void*()>&, dtype,
                              void*, const options&) {
  unavailable();
}
void fill_channels_stream(std::vector<device_histogram>&, dtype, int, const stream_reader&, const stream_reader*, dtype,
                          void*, stream_options) {
  unavailable();
}

}  // namespace tally
