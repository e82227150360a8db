// Sample and weight sources: .npy, raw binary and PNG/JPEG files, read chunk by chunk.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tally/dtype.hpp"
#include "text.hpp"

namespace tally_cli {

/// Sequential access to a file's values in native byte order, so files larger than memory
/// can be read twice (range pass, fill pass) in bounded chunks.
class chunk_reader {
 public:
  virtual ~chunk_reader() = default;
  /// Copies the next values, at most `max`, into `out`; returns how many (0 at the end).
  virtual std::int64_t read(void* out, std::int64_t max) = 0;
  virtual void rewind() = 0;
};

/// What a file holds, as the report shows it.
struct source_info {
  std::string path;
  std::string format;  // "npy 1.0", "raw", "PNG", "JPEG"
  std::string layout;  // "shape (1000, 2)", "256 x 256 pixels, 3 channels", ...
  tally::dtype type = tally::dtype::f64;
  std::int64_t values = 0;  // every value in the file
  int columns = 1;          // values per row the file declares: n x D matrix, image channels
  bool matrix = false;      // a 2-D .npy: one N-D histogram unless --channels says otherwise
  bool image = false;
  std::vector<std::string> names;          // channel names the format implies (images)
  std::optional<std::int64_t> integer_hi;  // images: the natural axis is integer [0, hi)
};

struct source : source_info {
  std::unique_ptr<chunk_reader> reader;
};

/// Opens `path` (`-`: standard input, copied to a temporary file) as .npy, .npz (its array `key`,
/// or its only one), PNG, JPEG or text
/// (CSV or columns of numbers, read as f64; `text` picks columns and the delimiter), told by its
/// first bytes, or, when `raw_type` is given, as raw native-endian values of that type. `gray` converts an image to one luminance channel.
/// Throws failure for unreadable or malformed files, usage_error for options that do not fit.
source open_samples(const std::string& path, std::optional<tally::dtype> raw_type, bool gray,
                    const text_options& text = {}, const std::string& key = "");

/// A value for each byte value: the byte b is read as map[b].
using byte_map = std::array<std::uint8_t, 256>;

/// Opens `path` (`-`: standard input, copied to a temporary file) as u8 values, one per byte,
/// whatever it holds (--text), each byte mapped by `map` where one is given. Streamed like raw
/// binary input. Throws failure where it cannot be read.
source open_bytes(const std::string& path, const byte_map* map);

/// The size of the open file `f` (named `path` in the error), in bytes.
std::uint64_t file_size(std::FILE* f, const std::string& path);

/// Opens the weights for `rows` samples: a .npy of f4/f8 or raw f32/f64 (told by the size).
source open_weights(const std::string& path, std::int64_t rows);

}  // namespace tally_cli
