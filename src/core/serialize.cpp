// serialize / deserialize: the byte format documented in tally/serialize.hpp, written and read
// byte by byte (little-endian on any host), every read bounded by the input's size.
#include <algorithm>
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
/// version that holds it (1, unless it keeps exact sums (2) or flow bins (3)), so older readers
/// still read it.
constexpr std::uint32_t kVersion = 3;

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
  /// A name: printable ASCII, as the format has it. Other bytes are corrupt, and quoted in a
  /// message they would make it other than text (Python decodes it as UTF-8).
  std::string str(const char* what) {
    const std::size_t n = u8(what);
    const std::byte* b = take(n, what);
    for (std::size_t i = 0; i < n; ++i)
      if (const auto c = static_cast<unsigned>(b[i]); c < 0x20 || c > 0x7E)
        throw error(std::string(what) + " holds byte " + std::to_string(c) + " at " + std::to_string(i) +
                    ", not printable ASCII");
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

/// The cells of the axes read so far, kept within what the bytes left could hold: each axis is
/// built only once its bins, times the earlier axes' cells, still fit. So the constructors' work
/// (a close-edged regular axis checks each edge) is bounded by the input's size in all: axes of
/// 2 or more bins have bins summing to at most their product, and an axis of 1 bin costs O(1).
class cell_budget {
 public:
  cell_budget(std::size_t item, std::uint32_t dims) : item_(item), dims_(dims) {}
  /// Throws unless `bins` more cells per cell so far fit in the bytes left; bins < 1 passes, for
  /// the axis' constructor to reject with its own message.
  void take(std::int64_t bins, const reader& r) { take_unsigned(bins < 1 ? 1 : static_cast<std::uint64_t>(bins), r); }
  void take_unsigned(std::uint64_t bins, const reader& r) {
    if (bins > r.left() / item_ / cells_)
      throw error("truncated input: axis " + std::to_string(axis_) + " of " + std::to_string(dims_) + " (" +
                  std::to_string(bins) + " bins) makes more cells than the " + std::to_string(r.left()) +
                  " bytes left hold (" + std::to_string(item_) + " bytes a cell)");
    cells_ *= bins;
    ++axis_;
  }

 private:
  std::size_t item_;
  std::uint32_t dims_;
  std::uint32_t axis_ = 0;
  std::uint64_t cells_ = 1;  // at most the bytes left at the last axis over item_
};

axis read_axis(reader& r, cell_budget& budget) {
  const std::uint8_t tag = r.u8("axis tag");
  switch (tag) {
    case tag_regular: {
      const std::int64_t bins = r.i64("regular bins");
      const double lo = r.f64("regular lo"), hi = r.f64("regular hi");
      const dtype edge_type = dtype_from_name(r.str("edge type"));
      budget.take(bins, r);
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
      budget.take(bins, r);
      return axis::regular_exact(bins, ends[0], ends[1]);
    }
    case tag_variable: {
      std::vector<double> edges(r.count(8, "variable edges"));
      for (double& e : edges) e = r.f64("variable edge");
      budget.take(static_cast<std::int64_t>(edges.size()) - 1, r);
      return axis::variable(std::move(edges));
    }
    case tag_variable_i64: {
      std::vector<std::int64_t> edges(r.count(8, "integer edges"));
      for (auto& e : edges) e = r.i64("integer edge");
      budget.take(static_cast<std::int64_t>(edges.size()) - 1, r);
      return axis::variable_integers(std::move(edges));
    }
    case tag_variable_u64: {
      std::vector<std::uint64_t> edges(r.count(8, "unsigned integer edges"));
      for (auto& e : edges) e = r.u64("unsigned integer edge");
      budget.take(static_cast<std::int64_t>(edges.size()) - 1, r);
      return axis::variable_integers(std::move(edges));
    }
    case tag_integer: {
      const std::int64_t lo = r.i64("integer lo"), hi = r.i64("integer hi");
      budget.take_unsigned(hi > lo ? static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) : 1, r);
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
  // Bit 0: flow counters; from version 3, bit 1: flow bins.
  const std::uint8_t flow = r.u8("the flow flag");
  if (flow > (version >= 3 ? 3 : 1))
    throw error("the flow flag must be 0 or 1" + std::string(version >= 3 ? " (plus 2 for flow bins)" : "") +
                ", got " + std::to_string(flow));
  h.opts.weighted = h.storage == store_sums || h.storage == store_exact;
  h.opts.exact_sums = h.storage == store_exact;
  h.opts.counts = h.storage == store_u32 ? count_type::u32 : count_type::u64;
  h.opts.flow = (flow & 1) != 0;
  h.opts.flow_bins = (flow & 2) != 0;
  if (h.opts.flow_bins && h.opts.weighted) throw error("flow bins given for a histogram of sums");
  // One histogram, one byte sequence: the version is the oldest that holds the histogram.
  const std::uint32_t oldest = h.opts.flow_bins ? 3 : h.storage == store_exact ? 2 : 1;
  if (version != oldest)
    throw error("format version " + std::to_string(version) + " for a histogram that version " +
                std::to_string(oldest) + " holds (tally writes the oldest version that holds it)");
  h.opts.backend = backend_from_name(r.str("the backend name"));
  h.opts.strategy = strategy_from_name(r.str("the strategy name"));
  const std::uint32_t threads = r.u32("threads");
  if (threads > static_cast<std::uint32_t>(std::numeric_limits<std::int32_t>::max()))
    throw error("threads must be >= 0 (0: all), got " + std::to_string(static_cast<std::int32_t>(threads)));
  // A count saved on a larger machine (or a corrupt one) fills with the threads this one has.
  h.opts.threads = std::min(static_cast<int>(threads), detail::hardware_threads());
  h.samples = r.u64("samples");
  h.dropped.underflow = r.u64("the underflow count");
  h.dropped.overflow = r.u64("the overflow count");
  h.dropped.nan = r.u64("the NaN count");
  // Each one: their total may wrap to 0.
  if (!h.opts.flow && (h.dropped.underflow | h.dropped.overflow | h.dropped.nan) != 0)
    throw error("flow counts given for a histogram without flow counters");
  const std::uint32_t dims = r.u32("the number of axes");
  cell_budget budget(cell_bytes(h.storage), dims);
  for (std::uint32_t d = 0; d < dims; ++d) h.axes.push_back(read_axis(r, budget));
  return h;
}

/// a + b, or an error naming `what` where the sum passes 2^64 - 1.
std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, const char* what) {
  if (b > std::numeric_limits<std::uint64_t>::max() - a) throw error(std::string(what) + " pass 2^64 - 1");
  return a + b;
}

/// The sum of `cells` N-byte counts at `in`, each below 2^63 (numpy reads counts as int64, and a
/// count that high takes 2^63 samples), else an error.
template <int N> std::uint64_t sum_of_counts(const std::byte* in, std::size_t cells) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < cells; ++i) {
    const std::uint64_t count = load_little_endian<N>(in + N * i);
    if (count >> 63)
      throw error("cell " + std::to_string(i) + "'s count " + std::to_string(count) +
                  " is 2^63 or more (counts are read as int64)");
    sum = checked_add(sum, count, "the cells' counts");
  }
  return sum;
}

/// samples() against the flow counters and, for counts (`counted`, their sum), the cells: every
/// sample a fill or merge adds is in one cell or, with flow counters, dropped under one reason.
void check_samples(const header& h, const std::uint64_t* counted) {
  const std::string samples = "samples() " + std::to_string(h.samples);
  const std::uint64_t dropped =
      checked_add(checked_add(h.dropped.underflow, h.dropped.overflow, "the flow counts"), h.dropped.nan, "the flow counts");
  if (!counted) {  // sums of weights: any value; the samples include the dropped ones
    if (h.samples < dropped)
      throw error(samples + " is fewer than the " + std::to_string(dropped) + " samples the flow counters dropped");
    return;
  }
  const std::uint64_t seen = checked_add(*counted, dropped, "the cells' counts and the flow counts");
  if (h.opts.flow ? h.samples != seen : h.samples < seen)
    throw error(samples + (h.opts.flow ? " is not " : " is fewer than ") + "the cells' " + std::to_string(*counted) +
                " counts" + (h.opts.flow ? " plus the " + std::to_string(dropped) + " dropped samples" : ""));
}

/// An exact-sum cell's words: flags of +inf, -inf and NaN only, and a sum within 2^2162 units
/// (fewer than 2^64 values below 2^1024, in units of 2^-1074), so the limbs above are its sign.
void check_exact_cell(const std::byte* in, std::size_t i) {
  constexpr int kSumBits = 64 + 1024 + 1074;
  constexpr int kTopLimb = detail::kWideWords - 1;
  constexpr int kSignBits = 64 * detail::kWideWords - kSumBits;  // the top limb's highest bits
  static_assert(kSignBits > 0 && kSignBits < 64, "the bound falls in the top limb");
  const std::uint64_t flags = load_little_endian<8>(in + 8 * detail::kWideWords);
  if (flags > 7)
    throw error("cell " + std::to_string(i) + "'s exact-sum flags " + std::to_string(flags) +
                " are not a combination of 1 (+inf), 2 (-inf) and 4 (NaN)");
  const std::uint64_t top = load_little_endian<8>(in + 8 * kTopLimb) >> (64 - kSignBits);
  if (top != 0 && top != (std::uint64_t{1} << kSignBits) - 1)
    throw error("cell " + std::to_string(i) + "'s exact sum reaches 2^2162 units of 2^-1074, beyond any sum of " +
                "fewer than 2^64 doubles");
}

/// The cells (`stored` of them at `in`) checked against the header: counts below 2^63, exact
/// sums' words, samples() and the flow counters.
void check_cells(const header& h, const std::byte* in, std::size_t stored) {
  std::uint64_t counted = 0;
  if (h.storage == store_u64) counted = sum_of_counts<8>(in, stored);
  else if (h.storage == store_u32) counted = sum_of_counts<4>(in, stored);
  else if (h.storage == store_exact)
    for (std::size_t i = 0; i < stored; ++i) check_exact_cell(in + 8 * detail::kWideCellWords * i, i);
  check_samples(h, h.opts.weighted ? nullptr : &counted);
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
  w.u32(o.flow_bins ? 3 : storage == store_exact ? 2 : 1);
  w.u8(storage);
  w.u8(static_cast<std::uint8_t>((o.flow ? 1 : 0) | (o.flow_bins ? 2 : 0)));
  w.str(name_of(o.backend));
  w.str(name_of(o.strategy));
  w.u32(static_cast<std::uint32_t>(o.threads));
  w.u64(h.samples());
  // Flow bins are cells: their histogram drops nothing.
  const flow_counts dropped = o.flow && !o.flow_bins ? h.flow() : flow_counts{};
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
    const std::int64_t cells = detail::cell_count(head.axes, head.opts.flow_bins);  // throws for no axis
    const std::size_t item = cell_bytes(head.storage);
    const std::size_t stored = r.count(item, "cells");
    if (static_cast<std::uint64_t>(stored) != static_cast<std::uint64_t>(cells))
      throw error(std::to_string(stored) + " cells stored for axes of " + std::to_string(cells) + " cells");
    const std::byte* in = r.take(stored * item, "the cells");
    if (r.left() != 0) throw error(std::to_string(r.left()) + " bytes after the end of the histogram");
    check_cells(head, in, stored);

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
