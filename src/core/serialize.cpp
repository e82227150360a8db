// serialize / deserialize: the byte format documented in tally/serialize.hpp, written and read
// byte by byte (little-endian on any host), every read bounded by the input's size.
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "core/backend.hpp"
#include "core/exact_sum.hpp"
#include "tally/serialize.hpp"

namespace tally {
namespace {

constexpr char kMagic[8] = {'T', 'A', 'L', 'L', 'Y', 'H', 'S', 'T'};
/// The newest version, read along with every older one. A histogram is written in the oldest
/// version that holds it (1, unless it keeps exact sums), so older readers still read it.
constexpr std::uint32_t kVersion = 2;

enum storage_code : std::uint8_t { store_u64 = 0, store_u32 = 1, store_sums = 2, store_exact = 3 };
enum axis_tag : std::uint8_t {
  tag_regular = 0,
  tag_regular_exact = 1,
  tag_variable = 2,
  tag_variable_i64 = 3,
  tag_variable_u64 = 4,
  tag_integer = 5
};

std::size_t cell_bytes(std::uint8_t storage) {
  return storage == store_u32 ? 4 : storage == store_exact ? 8 * detail::kWideCellWords : 8;
}

/// An N-byte little-endian unsigned integer (compilers merge the byte loads into one load on
/// little-endian hosts).
template <int N> std::uint64_t load_little_endian(const std::byte* b) {
  std::uint64_t v = 0;
  for (int i = 0; i < N; ++i) v |= static_cast<std::uint64_t>(b[i]) << (8 * i);
  return v;
}

std::uint64_t bits_of(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

double double_of(std::uint64_t bits) {
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

/// v as N little-endian bytes at p (merged into one store likewise).
template <int N> void store_little_endian(std::byte* p, std::uint64_t v) {
  for (int i = 0; i < N; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
}

class writer {
 public:
  explicit writer(std::size_t reserve) { out_.reserve(reserve); }
  /// n items of N bytes each, item i being value(i), stored in one pass.
  template <int N, class Value> void items(std::size_t n, Value&& value) {
    const std::size_t at = out_.size();
    out_.resize(at + n * N);
    std::byte* p = out_.data() + at;
    for (std::size_t i = 0; i < n; ++i, p += N) store_little_endian<N>(p, value(i));
  }
  void bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  void u8(std::uint8_t v) { out_.push_back(static_cast<std::byte>(v)); }
  void u32(std::uint32_t v) { items<4>(1, [v](std::size_t) { return v; }); }
  void u64(std::uint64_t v) { items<8>(1, [v](std::size_t) { return v; }); }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void f64(double v) { u64(bits_of(v)); }
  void str(std::string_view s) {
    u8(static_cast<std::uint8_t>(s.size()));  // names are short ASCII words
    bytes(s.data(), s.size());
  }
  std::vector<std::byte> take() { return std::move(out_); }

 private:
  std::vector<std::byte> out_;
};

/// Reads the input front to back; every read checks that its bytes are there.
class reader {
 public:
  reader(const void* data, std::size_t size) : p_(static_cast<const std::byte*>(data)), left_(size) {}
  std::size_t left() const { return left_; }
  const std::byte* take(std::size_t n, const char* what) {
    if (n > left_)
      throw error(std::string("truncated input: ") + what + " needs " + std::to_string(n) + " bytes, " +
                  std::to_string(left_) + " left");
    const std::byte* at = p_;
    p_ += n;
    left_ -= n;
    return at;
  }
  std::uint8_t u8(const char* what) { return static_cast<std::uint8_t>(load_little_endian<1>(take(1, what))); }
  std::uint32_t u32(const char* what) { return static_cast<std::uint32_t>(load_little_endian<4>(take(4, what))); }
  std::uint64_t u64(const char* what) { return load_little_endian<8>(take(8, what)); }
  std::int64_t i64(const char* what) { return static_cast<std::int64_t>(u64(what)); }
  double f64(const char* what) { return double_of(u64(what)); }
  std::string str(const char* what) {
    const std::size_t n = u8(what);
    const std::byte* b = take(n, what);
    return std::string(reinterpret_cast<const char*>(b), n);
  }
  /// The length of an array of `item`-byte elements, checked against the bytes left.
  std::size_t count(std::size_t item, const char* what) {
    const std::uint64_t n = u64(what);
    if (n > left_ / item)
      throw error(std::string("truncated input: ") + std::to_string(n) + " " + what + " of " +
                  std::to_string(item) + " bytes each, and " + std::to_string(left_) + " bytes left");
    return static_cast<std::size_t>(n);
  }

 private:
  const std::byte* p_;
  std::size_t left_;
};

void write_axis(writer& w, const axis& a) {
  switch (a.kind()) {
    case axis_kind::regular:
      if (a.has_exact_range()) {
        w.u8(tag_regular_exact);
        w.i64(a.bins());
        for (const integer_value v : {a.exact_lo(), a.exact_hi()}) {
          w.u8(v.negative ? 1 : 0);
          w.u64(v.magnitude);
        }
      } else {
        w.u8(tag_regular);
        w.i64(a.bins());
        w.f64(a.regular_lo());
        w.f64(a.regular_hi());
        w.str(name_of(a.edge_type()));
      }
      return;
    case axis_kind::variable:
      if (a.integer_edges().empty()) {
        w.u8(tag_variable);
        w.u64(a.variable_edges().size());
        for (double e : a.variable_edges()) w.f64(e);
      } else {
        w.u8(a.integer_edges_unsigned() ? tag_variable_u64 : tag_variable_i64);
        w.u64(a.integer_edges().size());
        for (std::int64_t e : a.integer_edges()) w.i64(e);
      }
      return;
    case axis_kind::integer:
      w.u8(tag_integer);
      w.i64(a.integer_lo());
      w.i64(a.integer_lo() + a.bins());
      return;
  }
}

/// Throws unless `bins` cells of `item` bytes could still follow: bounds the work an axis'
/// constructor does for a corrupt bin count by the input's size.
void check_bins(std::uint64_t bins, std::size_t item, const reader& r) {
  if (bins > r.left() / item)
    throw error("truncated input: an axis of " + std::to_string(bins) + " bins needs " + std::to_string(bins) +
                " cells, and only " + std::to_string(r.left()) + " bytes are left");
}

axis read_axis(reader& r, std::size_t item) {
  const std::uint8_t tag = r.u8("axis tag");
  switch (tag) {
    case tag_regular: {
      const std::int64_t bins = r.i64("regular bins");
      const double lo = r.f64("regular lo"), hi = r.f64("regular hi");
      const dtype edge_type = dtype_from_name(r.str("edge type"));
      check_bins(static_cast<std::uint64_t>(bins), item, r);
      return axis::regular(bins, lo, hi, edge_type);
    }
    case tag_regular_exact: {
      const std::int64_t bins = r.i64("regular_exact bins");
      integer_value ends[2];
      for (auto& v : ends) {
        const std::uint8_t negative = r.u8("regular_exact sign");
        if (negative > 1) throw error("regular_exact sign byte must be 0 or 1, got " + std::to_string(negative));
        v.negative = negative == 1;
        v.magnitude = r.u64("regular_exact magnitude");
      }
      check_bins(static_cast<std::uint64_t>(bins), item, r);
      return axis::regular_exact(bins, ends[0], ends[1]);
    }
    case tag_variable: {
      std::vector<double> edges(r.count(8, "variable edges"));
      for (double& e : edges) e = r.f64("variable edge");
      return axis::variable(std::move(edges));
    }
    case tag_variable_i64: {
      std::vector<std::int64_t> edges(r.count(8, "integer edges"));
      for (auto& e : edges) e = r.i64("integer edge");
      return axis::variable_integers(std::move(edges));
    }
    case tag_variable_u64: {
      std::vector<std::uint64_t> edges(r.count(8, "unsigned integer edges"));
      for (auto& e : edges) e = r.u64("unsigned integer edge");
      return axis::variable_integers(std::move(edges));
    }
    case tag_integer: {
      const std::int64_t lo = r.i64("integer lo"), hi = r.i64("integer hi");
      if (hi > lo) check_bins(static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo), item, r);
      return axis::integer(lo, hi);
    }
    default:
      throw error("unknown axis tag " + std::to_string(tag) + " (0 to 5 are defined)");
  }
}

/// Everything before the cells, read and checked.
struct header {
  options opts;
  std::uint8_t storage = store_u64;
  std::uint64_t samples = 0;
  flow_counts dropped;
  std::vector<axis> axes;
};

header read_header(reader& r) {
  const std::byte* magic = r.take(sizeof kMagic, "the magic");
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) throw error("not a tally histogram (wrong magic bytes)");
  const std::uint32_t version = r.u32("the format version");
  if (version < 1 || version > kVersion)
    throw error("format version " + std::to_string(version) + " is not supported (this tally reads versions 1 to " +
                std::to_string(kVersion) + ")");
  header h;
  h.storage = r.u8("the storage code");
  const std::uint8_t last = version == 1 ? store_sums : store_exact;
  if (h.storage > last)
    throw error("unknown storage code " + std::to_string(h.storage) + " in format version " + std::to_string(version) +
                " (0 to " + std::to_string(last) + " are defined)");
  const std::uint8_t flow = r.u8("the flow flag");
  if (flow > 1) throw error("the flow flag must be 0 or 1, got " + std::to_string(flow));
  h.opts.weighted = h.storage == store_sums || h.storage == store_exact;
  h.opts.exact_sums = h.storage == store_exact;
  h.opts.counts = h.storage == store_u32 ? count_type::u32 : count_type::u64;
  h.opts.flow = flow == 1;
  h.opts.backend = backend_from_name(r.str("the backend name"));
  h.opts.strategy = strategy_from_name(r.str("the strategy name"));
  h.opts.threads = static_cast<std::int32_t>(r.u32("threads"));
  h.samples = r.u64("samples");
  h.dropped.underflow = r.u64("the underflow count");
  h.dropped.overflow = r.u64("the overflow count");
  h.dropped.nan = r.u64("the NaN count");
  if (!h.opts.flow && h.dropped.total() != 0) throw error("flow counts given for a histogram without flow counters");
  const std::uint32_t dims = r.u32("the number of axes");
  for (std::uint32_t d = 0; d < dims; ++d) h.axes.push_back(read_axis(r, cell_bytes(h.storage)));
  return h;
}

}  // namespace

std::vector<std::byte> serialize(const histogram& h) {
  const options& o = h.opts();
  const std::uint8_t storage = o.exact_sums ? store_exact
                               : o.weighted ? store_sums
                               : o.counts == count_type::u32 ? store_u32 : store_u64;
  const auto cells = static_cast<std::size_t>(h.size());
  writer w(128 + cells * cell_bytes(storage));
  w.bytes(kMagic, sizeof kMagic);
  w.u32(storage == store_exact ? 2 : 1);
  w.u8(storage);
  w.u8(o.flow ? 1 : 0);
  w.str(name_of(o.backend));
  w.str(name_of(o.strategy));
  w.u32(static_cast<std::uint32_t>(o.threads));
  w.u64(h.samples());
  const flow_counts dropped = o.flow ? h.flow() : flow_counts{};
  w.u64(dropped.underflow);
  w.u64(dropped.overflow);
  w.u64(dropped.nan);
  w.u32(static_cast<std::uint32_t>(h.axes().size()));
  for (const axis& a : h.axes()) write_axis(w, a);
  w.u64(cells);
  if (storage == store_u64) w.items<8>(cells, [p = h.counts_u64()](std::size_t i) { return p[i]; });
  else if (storage == store_u32) w.items<4>(cells, [p = h.counts_u32()](std::size_t i) { return p[i]; });
  else if (storage == store_sums) w.items<8>(cells, [p = h.sums_data()](std::size_t i) { return bits_of(p[i]); });
  else {
    h.settle();
    w.items<8>(h.exact_.size(), [p = h.exact_.data()](std::size_t i) { return p[i]; });
  }
  return w.take();
}

histogram deserialize(const void* data, std::size_t size) {
  if (size > 0 && data == nullptr) throw error("deserialize: null data pointer with " + std::to_string(size) + " bytes");
  try {
    reader r(data, size);
    header head = read_header(r);
    const std::int64_t cells = detail::cell_count(head.axes);  // throws for no axis
    const std::size_t item = cell_bytes(head.storage);
    const std::size_t stored = r.count(item, "cells");
    if (static_cast<std::uint64_t>(stored) != static_cast<std::uint64_t>(cells))
      throw error(std::to_string(stored) + " cells stored for axes of " + std::to_string(cells) + " cells");
    const std::byte* in = r.take(stored * item, "the cells");
    if (r.left() != 0) throw error(std::to_string(r.left()) + " bytes after the end of the histogram");

    histogram h(std::move(head.axes), head.opts);
    h.before_host_change();  // the storage is written below
    for (std::size_t i = 0; i < stored && head.storage == store_u64; ++i)
      h.counts64_[i] = load_little_endian<8>(in + 8 * i);
    for (std::size_t i = 0; i < stored && head.storage == store_u32; ++i)
      h.counts32_[i] = static_cast<std::uint32_t>(load_little_endian<4>(in + 4 * i));
    for (std::size_t i = 0; i < stored && head.storage == store_sums; ++i)
      h.sums_[i] = double_of(load_little_endian<8>(in + 8 * i));
    if (head.storage == store_exact) {
      for (std::size_t i = 0; i < h.exact_.size(); ++i) h.exact_[i] = load_little_endian<8>(in + 8 * i);
      for (std::size_t i = 0; i < stored; ++i)
        if (const std::uint64_t flags = h.exact_[(i + 1) * detail::kWideCellWords - 1]; flags > 7)
          throw error("cell " + std::to_string(i) + "'s exact-sum flags " + std::to_string(flags) +
                      " are not a combination of 1 (+inf), 2 (-inf) and 4 (NaN)");
      h.round_exact();
    }
    h.samples_ = head.samples;
    h.flow_ = head.dropped;
    return h;
  } catch (const memory_error&) {
    throw;
  } catch (const error& e) {
    throw error(std::string("deserialize: ") + e.what());
  }
}

}  // namespace tally
