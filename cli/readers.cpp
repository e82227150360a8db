// Format detection and the chunked readers behind `source`: files (npy, raw) and decoded images.
#include "readers.hpp"

#include <stb_image.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <vector>

#include <sys/stat.h>

#include "errors.hpp"
#include "npy.hpp"
#include "npz.hpp"
#include "text.hpp"

namespace tally_cli {
namespace {

struct file_closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using file_ptr = std::unique_ptr<std::FILE, file_closer>;

file_ptr open_file(const std::string& path) {
  // Looked at before it is opened: opening a FIFO with no writer would wait forever.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) throw failure(path + ": is a directory");
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw failure(path + ": not a regular file (a pipe, socket or device); tally reads files");
  file_ptr f(std::fopen(path.c_str(), "rb"));
  if (!f) throw failure(path + ": cannot open: " + std::strerror(errno));
  return f;
}

/// Standard input copied to an anonymous temporary file (removed when closed, or when the
/// process ends however it ends), so that it can be read twice like a file.
file_ptr spool_stdin() {
  file_ptr copy(std::tmpfile());
  if (!copy) throw failure(std::string("stdin: cannot make a temporary copy: ") + std::strerror(errno));
  std::vector<char> buffer(1 << 20);
  while (const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), stdin))
    if (std::fwrite(buffer.data(), 1, n, copy.get()) != n)
      throw failure(std::string("stdin: cannot write its temporary copy: ") + std::strerror(errno));
  if (std::ferror(stdin)) throw failure(std::string("stdin: read failed: ") + std::strerror(errno));
  std::rewind(copy.get());
  return copy;
}

/// `given` opened for reading: a file, or standard input copied (`-`).
file_ptr open_input(const std::string& given) { return given == "-" ? spool_stdin() : open_file(given); }
/// How `given` is named in the report and in messages.
std::string input_name(const std::string& given) { return given == "-" ? "stdin" : given; }

/// Values stored contiguously in a file from `offset` on, byte-swapped when the file's byte
/// order is not the machine's (big-endian .npy).
class file_reader final : public chunk_reader {
 public:
  file_reader(file_ptr f, std::string path, std::uint64_t offset, std::int64_t count,
              std::size_t item, bool swap)
      : f_(std::move(f)),
        path_(std::move(path)),
        offset_(offset),
        count_(count),
        item_(item),
        swap_(swap && item > 1) {
    rewind();
  }
  std::int64_t read(void* out, std::int64_t max) override {
    const std::int64_t n = std::min(max, count_ - pos_);
    if (n <= 0) return 0;
    if (std::fread(out, item_, static_cast<std::size_t>(n), f_.get()) !=
        static_cast<std::size_t>(n))
      throw failure(path_ + ": read failed (was the file truncated while reading?)");
    if (swap_) {
      auto* bytes = static_cast<unsigned char*>(out);
      for (std::int64_t i = 0; i < n; ++i) std::reverse(bytes + i * item_, bytes + (i + 1) * item_);
    }
    pos_ += n;
    return n;
  }
  void rewind() override {
    if (std::fseek(f_.get(), static_cast<long>(offset_), SEEK_SET) != 0)
      throw failure(path_ + ": cannot seek: " + std::strerror(errno));
    pos_ = 0;
  }

 private:
  file_ptr f_;
  std::string path_;
  std::uint64_t offset_;
  std::int64_t count_;
  std::size_t item_;
  bool swap_;
  std::int64_t pos_ = 0;
};

/// Values already in memory (decoded pixels, parsed text), kept alive by `owner`.
class memory_reader final : public chunk_reader {
 public:
  memory_reader(std::shared_ptr<const void> owner, std::int64_t count, std::size_t item)
      : owner_(std::move(owner)), count_(count), item_(item) {}
  std::int64_t read(void* out, std::int64_t max) override {
    const std::int64_t n = std::min(max, count_ - pos_);
    if (n <= 0) return 0;
    std::memcpy(out, static_cast<const char*>(owner_.get()) + pos_ * item_, n * item_);
    pos_ += n;
    return n;
  }
  void rewind() override { pos_ = 0; }

 private:
  std::shared_ptr<const void> owner_;
  std::int64_t count_;
  std::size_t item_;
  std::int64_t pos_ = 0;
};

/// Bytes read through another reader, each replaced by its value in a byte_map.
class mapped_byte_reader final : public chunk_reader {
 public:
  mapped_byte_reader(std::unique_ptr<chunk_reader> bytes, const byte_map& map)
      : bytes_(std::move(bytes)), map_(map) {}
  std::int64_t read(void* out, std::int64_t max) override {
    const std::int64_t n = bytes_->read(out, max);
    auto* b = static_cast<std::uint8_t*>(out);
    for (std::int64_t i = 0; i < n; ++i) b[i] = map_[b[i]];
    return n;
  }
  void rewind() override { bytes_->rewind(); }

 private:
  std::unique_ptr<chunk_reader> bytes_;
  byte_map map_;
};

enum class format { npy, png, jpeg, unknown };

format sniff(std::FILE* f) {
  unsigned char head[8] = {};
  const std::size_t got = std::fread(head, 1, sizeof head, f);
  std::rewind(f);
  if (got >= 6 && std::memcmp(head, "\x93NUMPY", 6) == 0) return format::npy;
  if (got >= 8 && std::memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0) return format::png;
  if (got >= 3 && std::memcmp(head, "\xFF\xD8\xFF", 3) == 0) return format::jpeg;
  return format::unknown;
}

/// CRC-32 as PNG (and zlib) compute it, of `n` more bytes after `crc` (0 to start).
std::uint32_t crc32(std::uint32_t crc, const unsigned char* bytes, std::size_t n) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int bit = 0; bit < 8; ++bit) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (std::size_t i = 0; i < n; ++i) crc = table[(crc ^ bytes[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

std::uint32_t big_endian_u32(const unsigned char* b) {
  return std::uint32_t{b[0]} << 24 | std::uint32_t{b[1]} << 16 | std::uint32_t{b[2]} << 8 | b[3];
}

/// Refuses a PNG with a chunk whose CRC does not match: stb_image checks none, so a damaged file
/// would decode to wrong pixels without a word. Chunks are checked up to IEND; a file that ends
/// before it is left to the decoder, which says how it is cut short.
void check_png_crcs(std::FILE* f, const std::string& path) {
  std::vector<unsigned char> buffer(1 << 16);
  if (std::fseek(f, 8, SEEK_SET) != 0) throw failure(path + ": cannot seek: " + std::strerror(errno));
  for (;;) {
    unsigned char head[8];  // length, type
    if (std::fread(head, 1, sizeof head, f) != sizeof head) break;
    const std::string type(reinterpret_cast<const char*>(head + 4), 4);
    std::uint32_t crc = crc32(0, head + 4, 4);
    std::uint32_t left = big_endian_u32(head);
    while (left > 0) {
      const std::size_t n = std::min<std::size_t>(left, buffer.size());
      if (std::fread(buffer.data(), 1, n, f) != n) break;
      crc = crc32(crc, buffer.data(), n);
      left -= static_cast<std::uint32_t>(n);
    }
    unsigned char stored[4];
    if (left > 0 || std::fread(stored, 1, sizeof stored, f) != sizeof stored) break;
    if (big_endian_u32(stored) != crc)
      throw failure(path + ": damaged PNG: the CRC of its '" + type + "' chunk does not match");
    if (type == "IEND") break;
  }
  std::rewind(f);
}

source open_npy(file_ptr f, const std::string& path) {
  const npy_header h = read_npy_header(f.get(), path);
  std::int64_t n = 0;
  try {
    n = h.values();
  } catch (const failure& e) {
    throw failure(path + ": " + e.what());  // the file named, as in every file error
  }
  const std::size_t item = tally::size_of(h.type);
  const std::uint64_t size = file_size(f.get(), path);
  const std::uint64_t available = size > h.data_offset ? size - h.data_offset : 0;
  if (available / item < static_cast<std::uint64_t>(n))
    throw failure(path + ": truncated .npy: the header promises " + std::to_string(n) +
                  " values of " + std::to_string(item) + " bytes but " +
                  std::to_string(available) + " bytes follow it");
  source s;
  s.path = path;
  s.format = "npy " + std::to_string(h.major) + "." + std::to_string(h.minor);
  s.type = h.type;
  s.values = n;
  s.layout = "shape (";
  for (std::size_t k = 0; k < h.shape.size(); ++k)
    s.layout += (k ? ", " : "") + std::to_string(h.shape[k]);
  s.layout += h.shape.size() == 1 ? ",)" : ")";
  if (h.shape.size() == 2) {
    s.matrix = true;
    if (h.shape[1] < 1) throw failure(path + ": a matrix with no columns");
    if (h.shape[1] > std::numeric_limits<int>::max())
      throw failure(path + ": a matrix of " + std::to_string(h.shape[1]) +
                    " columns; tally reads at most " +
                    std::to_string(std::numeric_limits<int>::max()));
    s.columns = static_cast<int>(h.shape[1]);
  }
  s.reader =
      std::make_unique<file_reader>(std::move(f), path, h.data_offset, n, item, h.big_endian);
  return s;
}

source open_raw(file_ptr f, const std::string& path, tally::dtype type) {
  const std::uint64_t size = file_size(f.get(), path);
  const std::size_t item = tally::size_of(type);
  if (size % item != 0)
    throw failure(path + ": " + std::to_string(size) + " bytes is not a multiple of the " +
                  std::to_string(item) + "-byte " + std::string(tally::name_of(type)));
  source s;
  s.path = path;
  s.format = "raw";
  s.type = type;
  s.values = static_cast<std::int64_t>(size / item);
  s.layout = std::to_string(s.values) + " values";
  s.reader = std::make_unique<file_reader>(std::move(f), path, 0, s.values, item, false);
  return s;
}

/// The file's first bytes (at most `n`), the position left at the start.
std::string head_of(std::FILE* f, std::size_t n) {
  std::string head(n, '\0');
  head.resize(std::fread(head.data(), 1, n, f));
  std::rewind(f);
  return head;
}

source open_text(file_ptr f, const std::string& path, const text_options& options) {
  std::string text;
  std::vector<char> buffer(1 << 20);
  while (const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), f.get())) text.append(buffer.data(), n);
  if (std::ferror(f.get())) throw failure(path + ": read failed: " + std::strerror(errno));
  text_table t = parse_text(text, path, options);
  source s;
  s.path = path;
  s.format = t.delimiter == ',' ? "CSV" : "text";
  s.type = tally::dtype::f64;  // numpy.loadtxt's default
  const int columns = static_cast<int>(t.names.size());
  s.columns = std::max(columns, 1);
  s.matrix = columns > 1;
  s.values = static_cast<std::int64_t>(t.values.size());
  const std::int64_t rows = s.values / s.columns;
  s.layout = std::to_string(rows) + (rows == 1 ? " row" : " rows") + " x " + std::to_string(t.file_columns) +
             (t.file_columns == 1 ? " column" : " columns") + (t.header ? ", a header" : "");
  if (columns < t.file_columns) {
    s.layout += "; column";
    s.layout += columns == 1 ? " " : "s ";
    for (int c = 0; c < columns; ++c) s.layout += (c ? ", " : "") + t.names[c];
  }
  if (t.header) s.names = t.names;
  auto values = std::make_shared<const std::vector<double>>(std::move(t.values));
  s.reader = std::make_unique<memory_reader>(std::shared_ptr<const void>(values, values->data()), s.values,
                                             sizeof(double));
  return s;
}

std::vector<std::string> channel_names(int channels, bool gray) {
  switch (channels) {
    case 1:
      return {gray ? "gray" : "L"};
    case 2:
      return {"L", "A"};
    case 3:
      return {"R", "G", "B"};
    default:
      return {"R", "G", "B", "A"};
  }
}

source open_image(std::FILE* f, const std::string& path, format fmt, bool gray) {
  int w = 0, h = 0, channels = 0;
  std::rewind(f);
  if (!stbi_info_from_file(f, &w, &h, &channels)) {
    // stbi_info tries every format and keeps the last one's reason ("unknown image type");
    // loading stops at the format the header names, with that format's own reason.
    std::rewind(f);
    stbi_image_free(stbi_load_from_file(f, &w, &h, &channels, 0));
    throw failure(path + ": cannot decode the image: " + stbi_failure_reason());
  }
  const bool wide = stbi_is_16_bit_from_file(f);
  const int wanted = gray ? 1 : 0;
  std::rewind(f);
  void* pixels = wide ? static_cast<void*>(stbi_load_from_file_16(f, &w, &h, &channels, wanted))
                      : static_cast<void*>(stbi_load_from_file(f, &w, &h, &channels, wanted));
  if (!pixels) throw failure(path + ": cannot decode the image: " + stbi_failure_reason());
  const std::shared_ptr<const void> owned(pixels, stbi_image_free);
  if (gray) channels = 1;

  source s;
  s.path = path;
  s.format = fmt == format::png ? "PNG" : "JPEG";
  s.image = true;
  s.type = wide ? tally::dtype::u16 : tally::dtype::u8;
  s.columns = channels;
  s.values = std::int64_t{w} * h * channels;
  s.layout = std::to_string(w) + " x " + std::to_string(h) + " pixels, " +
             std::to_string(channels) + (channels == 1 ? " channel" : " channels");
  s.names = channel_names(channels, gray);
  s.integer_hi = wide ? 65536 : 256;
  s.reader = std::make_unique<memory_reader>(owned, s.values, tally::size_of(s.type));
  return s;
}

}  // namespace

std::uint64_t file_size(std::FILE* f, const std::string& path) {
  struct stat st {};
  if (fstat(fileno(f), &st) != 0) throw failure(path + ": cannot read its size: " + std::strerror(errno));
  return static_cast<std::uint64_t>(st.st_size);
}

source open_samples(const std::string& given, std::optional<tally::dtype> raw_type, bool gray,
                    const text_options& text, const std::string& key) {
  const std::string path = input_name(given);
  file_ptr f = open_input(given);
  if (is_zip(f.get())) {  // an .npz archive: its array `key` (or its only one), as a .npy file
    if (!text.columns.empty() || !text.delimiter.empty())
      throw usage_error(std::string(text.columns.empty() ? "--delimiter" : "--column") +
                        " is for text and CSV input, but " + path + " is an .npz archive");
    std::string found;
    f = file_ptr(npz_member(f.get(), path, key, found));
    return open_npy(std::move(f), path + "[" + found + "]");
  }
  if (!key.empty()) throw usage_error("--key is for .npz archives, but " + path + " is not one");
  const format fmt = sniff(f.get());
  const bool is_image = fmt == format::png || fmt == format::jpeg;
  const bool is_text = fmt == format::unknown && !raw_type && looks_like_text(head_of(f.get(), 1 << 16));
  if ((!text.columns.empty() || !text.delimiter.empty()) && !is_text)
    throw usage_error(std::string(text.columns.empty() ? "--delimiter" : "--column") +
                      " is for text and CSV input, but " + path + " is " +
                      (fmt == format::npy ? "a .npy file" : is_image ? "an image" : "binary"));
  if (is_text) return open_text(std::move(f), path, text);
  if (raw_type && fmt != format::unknown)
    throw usage_error("--dtype is for raw binary files, but " + path + " is " +
                      (fmt == format::npy ? "a .npy file" : "an image"));
  if (gray && !is_image) throw usage_error("--gray is for PNG and JPEG images");
  switch (fmt) {
    case format::npy:
      return open_npy(std::move(f), path);
    case format::png:
      check_png_crcs(f.get(), path);
      return open_image(f.get(), path, fmt, gray);
    case format::jpeg:
      return open_image(f.get(), path, fmt, gray);
    case format::unknown:
      break;
  }
  if (!raw_type)
    throw usage_error(path +
                      " is neither .npy, PNG, JPEG nor text; give --dtype to read it as raw binary");
  return open_raw(std::move(f), path, *raw_type);
}

source open_bytes(const std::string& given, const byte_map* map) {
  source s = open_raw(open_input(given), input_name(given), tally::dtype::u8);
  s.format = "text";
  s.layout = std::to_string(s.values) + (s.values == 1 ? " byte" : " bytes");
  if (map) s.reader = std::make_unique<mapped_byte_reader>(std::move(s.reader), *map);
  return s;
}

source open_weights(const std::string& path, std::int64_t rows) {
  file_ptr f = open_file(path);
  source w;
  if (sniff(f.get()) == format::npy) {
    w = open_npy(std::move(f), path);
    if (w.matrix && w.columns != 1)
      throw failure(path + ": weights must be a 1-D array, not " + w.layout);
  } else {
    // Raw weights carry no type: the size tells f32 from f64.
    const std::uint64_t size = file_size(f.get(), path);
    const std::uint64_t n = static_cast<std::uint64_t>(rows);
    if (size != n * 4 && size != n * 8)
      throw failure(path + ": " + std::to_string(size) + " bytes of raw weights; " +
                    std::to_string(rows) + " samples need " + std::to_string(n * 4) + " (f32) or " +
                    std::to_string(n * 8) + " (f64)");
    w = open_raw(std::move(f), path,
                 size == n * 4 && n > 0 ? tally::dtype::f32 : tally::dtype::f64);
  }
  if (w.type != tally::dtype::f32 && w.type != tally::dtype::f64)
    throw failure(path + ": weights must be f4 or f8, not " + std::string(tally::name_of(w.type)));
  if (w.values != rows)
    throw failure(path + ": " + std::to_string(w.values) + " weights for " + std::to_string(rows) +
                  " samples");
  return w;
}

}  // namespace tally_cli
