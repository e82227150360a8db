// Reads the .npy header: the magic, the version, and the Python dict literal that follows it.
#include "npy.hpp"

#include <cctype>
#include <cstring>
#include <limits>

#include "errors.hpp"

namespace tally_cli {
namespace {

/// A cursor over the header dict, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (3,), }
/// The header is a Python literal, not JSON, so it gets its own small parser.
class dict_parser {
 public:
  dict_parser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  [[noreturn]] void fail(const std::string& why) const {
    // The header ends in padding and a newline; the message stays on one line.
    const std::size_t end = s_.find_last_not_of(" \n");
    throw failure(path_ + ": bad .npy header (" + why + "): " + s_.substr(0, end + 1));
  }
  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool accept(char c) {
    skip_space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  bool at(char c) {
    skip_space();
    return i_ < s_.size() && s_[i_] == c;
  }
  std::string string_literal() {
    skip_space();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) fail("expected a string");
    const char quote = s_[i_++];
    const std::size_t end = s_.find(quote, i_);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = s_.substr(i_, end - i_);
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    for (const char* word : {"True", "False"}) {
      if (s_.compare(i_, std::strlen(word), word) == 0) {
        i_ += std::strlen(word);
        return word[0] == 'T';
      }
    }
    fail("expected True or False");
  }
  std::vector<std::int64_t> int_tuple() {
    expect('(');
    std::vector<std::int64_t> out;
    while (!accept(')')) {
      skip_space();
      std::int64_t v = 0;
      const std::size_t start = i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        if (v > (std::numeric_limits<std::int64_t>::max() - 9) / 10) fail("dimension too large");
        v = v * 10 + (s_[i_++] - '0');
      }
      if (i_ == start) fail("expected a dimension");
      accept('L');  // Python 2 longs
      out.push_back(v);
      if (!accept(',') && !at(')')) fail("expected ',' or ')'");
    }
    return out;
  }

 private:
  const std::string& s_;
  const std::string& path_;
  std::size_t i_ = 0;
};

struct descr_entry {
  const char* code;  // kind and size, without the byte order
  tally::dtype type;
};
constexpr descr_entry kDescrs[] = {
    {"u1", tally::dtype::u8},  {"i1", tally::dtype::i8},  {"u2", tally::dtype::u16},
    {"i2", tally::dtype::i16}, {"u4", tally::dtype::u32}, {"i4", tally::dtype::i32},
    {"u8", tally::dtype::u64}, {"i8", tally::dtype::i64}, {"f2", tally::dtype::f16},
    {"f4", tally::dtype::f32}, {"f8", tally::dtype::f64},
};

void parse_descr(const std::string& descr, npy_header& h, const std::string& path) {
  const char order = descr.empty() ? '?' : descr[0];
  if (descr.size() == 3 && (order == '<' || order == '>' || order == '|' || order == '=')) {
    for (const descr_entry& e : kDescrs) {
      if (descr.compare(1, 2, e.code) == 0) {
        h.type = e.type;
        h.big_endian = order == '>';
        return;
      }
    }
  }
  throw failure(path + ": unsupported .npy dtype '" + descr +
                "' (supported: u1 i1 u2 i2 u4 i4 u8 i8 f2 f4 f8, either byte order)");
}

std::uint64_t read_le(const unsigned char* p, int bytes) {
  std::uint64_t v = 0;
  for (int k = bytes - 1; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

}  // namespace

std::int64_t npy_header::values() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d)
      throw failure("the .npy shape overflows 64 bits");
    n *= d;
  }
  return n;
}

npy_header read_npy_header(std::FILE* f, const std::string& path) {
  unsigned char fixed[12];
  const std::size_t got = std::fread(fixed, 1, sizeof fixed, f);
  if (got < 10 || std::memcmp(fixed, "\x93NUMPY", 6) != 0)
    throw failure(path + ": not a .npy file (bad magic or truncated header)");
  npy_header h;
  h.major = fixed[6];
  h.minor = fixed[7];
  if (h.major < 1 || h.major > 3)
    throw failure(path + ": unsupported .npy format version " + std::to_string(h.major) + "." +
                  std::to_string(h.minor));
  // Version 1.0 stores the header length in 2 bytes, 2.0 and 3.0 in 4 bytes.
  const int len_bytes = h.major == 1 ? 2 : 4;
  if (got < static_cast<std::size_t>(8 + len_bytes))
    throw failure(path + ": truncated .npy header");
  const std::uint64_t header_len = read_le(fixed + 8, len_bytes);
  if (header_len > (std::uint64_t{1} << 26))  // numpy's own limit is far lower
    throw failure(path + ": bad .npy header (a header length of " + std::to_string(header_len) +
                  " bytes)");
  h.data_offset = 8 + len_bytes + header_len;

  std::string text(header_len, '\0');
  if (std::fseek(f, 8 + len_bytes, SEEK_SET) != 0 ||
      std::fread(text.data(), 1, header_len, f) != header_len)
    throw failure(path + ": truncated .npy header");

  dict_parser p(text, path);
  bool have_descr = false, have_order = false, have_shape = false;
  p.expect('{');
  while (!p.accept('}')) {
    const std::string key = p.string_literal();
    p.expect(':');
    if (key == "descr") {
      if (!p.at('\'') && !p.at('"'))
        throw failure(path + ": structured .npy dtypes are not supported");
      parse_descr(p.string_literal(), h, path);
      have_descr = true;
    } else if (key == "fortran_order") {
      h.fortran_order = p.boolean();
      have_order = true;
    } else if (key == "shape") {
      h.shape = p.int_tuple();
      have_shape = true;
    } else {
      p.fail("unknown key '" + key + "'");
    }
    if (!p.accept(',') && !p.at('}')) p.fail("expected ',' or '}'");
  }
  if (!have_descr || !have_order || !have_shape)
    p.fail("it needs the keys descr, fortran_order and shape");
  if (h.shape.size() > 2)
    throw failure(path + ": a " + std::to_string(h.shape.size()) +
                  "-D array; tally reads 1-D arrays and n x D matrices");
  if (h.fortran_order && h.shape.size() == 2 && h.shape[0] > 1 && h.shape[1] > 1)
    throw failure(path + ": Fortran-order matrices are not supported (save with C order)");
  return h;
}

}  // namespace tally_cli
