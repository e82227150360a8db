// What a fill may allocate: the memory this process can still take, checked before an
// allocation is made, and storage that reads as zeros and costs pages only where written.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <type_traits>

namespace tally::detail {

/// Bytes this process may still touch: the kernel's MemAvailable, or its cgroup's limit less
/// its usage, whichever is less (no limit known: the largest value).
std::uint64_t available_memory();
/// Bytes this process may reserve at most: RAM and swap, or its cgroup's limit, whichever is
/// less (Linux refuses a single reservation beyond RAM and swap).
std::uint64_t memory_limit();

/// Below this size an allocation is not checked: the reading of the limits would cost more.
constexpr std::uint64_t kCheckedBytes = std::uint64_t{64} << 20;

/// Throws tally::memory_error, naming `what`, unless `bytes` that will be written all fit the
/// available memory.
void ensure_memory(std::uint64_t bytes, const std::string& what);
/// The same for `bytes` reserved as zeros and written sparsely (zeroed_array): they must fit
/// the memory limit.
void ensure_reservable(std::uint64_t bytes, const std::string& what);
/// a * b, or the largest value where it overflows (a size that cannot be allocated).
std::uint64_t times(std::uint64_t a, std::uint64_t b);

/// n zeros of T from calloc: fresh pages from the system, which cost memory only where written.
/// Checked with ensure_reservable; bad_alloc becomes tally::memory_error.
template <class T> class zeroed_array {
 public:
  zeroed_array() = default;
  zeroed_array(std::size_t n, const std::string& what) : n_(n) {
    static_assert(std::is_trivially_copyable_v<T>, "zeroed_array holds plain values");
    ensure_reservable(times(n, sizeof(T)), what);
    data_.reset(static_cast<T*>(std::calloc(n == 0 ? 1 : n, sizeof(T))));
    if (!data_) ensure_reservable(~std::uint64_t{0}, what);  // throws, naming what could not be had
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  std::size_t size() const { return n_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  struct release {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T[], release> data_;
  std::size_t n_ = 0;
};

}  // namespace tally::detail
