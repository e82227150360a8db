// Running the tally binary and writing its input files, for the end-to-end tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace cli_test {

struct outcome {
  int code = -1;
  std::string out, err;
};

/// Runs the built `tally` with `args` (no shell interpretation of them).
outcome tally(const std::vector<std::string>& args);
/// The same with the file `input` piped into its standard input.
outcome tally_piped(const std::vector<std::string>& args, const std::string& input);
/// The same under an address-space limit of `address_space_kib` (ulimit -v), with thread stacks
/// of 8 MiB (ulimit -s 8192, most systems' default), so a thread costs what it usually does.
outcome tally_limited(const std::vector<std::string>& args, std::uint64_t address_space_kib);

/// A fresh directory, removed with everything in it at the end of the test.
class scratch {
 public:
  scratch();
  ~scratch();
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  /// Names of the files in the directory, sorted.
  std::vector<std::string> listing() const;

 private:
  std::filesystem::path dir_;
};

void write_bytes(const std::string& path, const std::string& bytes);
std::string read_bytes(const std::string& path);

/// The raw bytes of a vector's elements, in this machine's (little-endian) order.
template <class T>
std::string bytes_of(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

/// A .npy file as numpy writes it: magic, version, the header dict padded with spaces to a
/// multiple of 64 bytes and ending in '\n', then `data`.
std::string npy(const std::string& descr, const std::vector<std::int64_t>& shape,
                const std::string& data, int major = 1, bool fortran = false);

/// CSV rows split at commas (the tool writes no quoted fields); the header is row 0.
std::vector<std::vector<std::string>> csv_rows(const std::string& text);

}  // namespace cli_test
