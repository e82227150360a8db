// The .npy header (format versions 1.0, 2.0, 3.0): what the array holds and where its data start.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tally/dtype.hpp"

namespace tally_cli {

struct npy_header {
  int major = 1, minor = 0;
  tally::dtype type = tally::dtype::f64;
  bool big_endian = false;  // only meaningful for items wider than one byte
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
  std::uint64_t data_offset = 0;  // bytes from the start of the file
  std::int64_t values() const;    // product of the shape (1 for a 0-d array)
};

/// Parses the header at the start of `f` (positioned at 0); throws failure naming `path` for
/// a bad magic string, an unsupported version or dtype, or a malformed header dictionary.
npy_header read_npy_header(std::FILE* f, const std::string& path);

}  // namespace tally_cli
