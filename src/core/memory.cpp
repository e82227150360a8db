// The memory limits of this process, read from Linux's /proc and cgroup files.
#include "core/memory.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <string>

#include "tally/error.hpp"

namespace tally::detail {
namespace {

constexpr std::uint64_t kUnknown = std::numeric_limits<std::uint64_t>::max();

/// A /proc/meminfo field in bytes (kUnknown where absent).
std::uint64_t meminfo(const std::string& field) {
  std::ifstream in("/proc/meminfo");
  std::string name, unit;
  std::uint64_t kib = 0;
  while (in >> name >> kib) {
    std::getline(in, unit);
    if (name == field + ":") return kib * 1024;
  }
  return kUnknown;
}

/// The first number in a file ("max" and unreadable files: kUnknown).
std::uint64_t number_in(const char* path) {
  std::ifstream in(path);
  std::uint64_t v = 0;
  return in >> v ? v : kUnknown;
}

/// The cgroup's limit (v2, else v1; kUnknown where none).
std::uint64_t cgroup_limit() {
  const std::uint64_t v2 = number_in("/sys/fs/cgroup/memory.max");
  if (v2 != kUnknown) return v2;
  const std::uint64_t v1 = number_in("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  return v1 >= (std::uint64_t{1} << 60) ? kUnknown : v1;  // v1 writes "no limit" as a huge number
}

std::uint64_t cgroup_usage() {
  const std::uint64_t v2 = number_in("/sys/fs/cgroup/memory.current");
  return v2 != kUnknown ? v2 : number_in("/sys/fs/cgroup/memory/memory.usage_in_bytes");
}

std::string gib(std::uint64_t bytes) {
  std::ostringstream s;
  s.precision(3);
  s << static_cast<double>(bytes) / (1 << 30) << " GiB";
  return s.str();
}

void ensure(std::uint64_t bytes, std::uint64_t room, const char* kind, const std::string& what) {
  if (bytes < kCheckedBytes || bytes <= room) return;
  throw memory_error(what + " needs " + (bytes == kUnknown ? std::string("more than can be addressed") : gib(bytes)) +
                     ", but this process has " + gib(room) + " of memory " + kind);
}

}  // namespace

std::uint64_t available_memory() {
  std::uint64_t room = meminfo("MemAvailable");
  const std::uint64_t limit = cgroup_limit();
  if (limit != kUnknown) {
    const std::uint64_t used = cgroup_usage();
    const std::uint64_t left = used == kUnknown ? limit : (used >= limit ? 0 : limit - used);
    room = std::min(room, left);
  }
  return room;
}

std::uint64_t memory_limit() {
  // Read at most once a second: the files' reading took about 50 us, most of a sparse bincount
  // of one huge value, and the limits change only when swap or the cgroup is reconfigured.
  static std::mutex mutex;
  static std::uint64_t known = 0;
  static std::chrono::steady_clock::time_point read_at;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mutex);
  if (known == 0 || now - read_at > std::chrono::seconds(1)) {
    const std::uint64_t total = meminfo("MemTotal"), swap = meminfo("SwapTotal");
    const std::uint64_t room = total == kUnknown ? kUnknown : total + (swap == kUnknown ? 0 : swap);
    known = std::min(room, cgroup_limit());
    read_at = now;
  }
  return known;
}

void ensure_memory(std::uint64_t bytes, const std::string& what) {
  if (bytes >= kCheckedBytes) ensure(bytes, available_memory(), "available", what);
}

void ensure_reservable(std::uint64_t bytes, const std::string& what) {
  if (bytes >= kCheckedBytes) ensure(bytes, memory_limit(), "in all", what);
}

std::uint64_t times(std::uint64_t a, std::uint64_t b) {
  return b != 0 && a > kUnknown / b ? kUnknown : a * b;
}

}  // namespace tally::detail
