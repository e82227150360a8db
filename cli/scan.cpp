// Extrema per column in the samples' own type, dispatched once per dtype.
#include "scan.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tally_cli {

double to_double(const exact& v) {
  return std::visit([](auto x) { return static_cast<double>(x); }, v);
}

std::optional<std::int64_t> to_int64(const exact& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (const auto* u = std::get_if<std::uint64_t>(&v)) {
    if (*u <= static_cast<std::uint64_t>(INT64_MAX)) return static_cast<std::int64_t>(*u);
  }
  return std::nullopt;
}

std::string to_text(const exact& v) {
  return std::visit(
      [](auto x) {
        char buf[64];
        const auto r = std::to_chars(buf, buf + sizeof buf, x);
        return std::string(buf, r.ptr);
      },
      v);
}

namespace {

/// The type extrema are kept in: the widest of the sample's kind, so one variant holds them.
template <class T>
struct kept {
  using type =
      std::conditional_t<std::is_floating_point_v<T>, T,
                         std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>>;
};
template <>
struct kept<tally::half> {
  using type = float;
};
template <>
struct kept<tally::bfloat16> {
  using type = float;
};

template <class T>
typename kept<T>::type widen(T x) {
  return x;
}
float widen(tally::half x) { return static_cast<float>(tally::to_double(x)); }
float widen(tally::bfloat16 x) { return static_cast<float>(tally::to_double(x)); }

}  // namespace

struct scanner::impl {
  virtual ~impl() = default;
  virtual void add(const void* data, std::int64_t values) = 0;
  virtual std::vector<extrema> result() const = 0;
  std::vector<std::vector<unsigned char>> kept_values;  // per column, where kept: the values' bytes
  tally::dtype type = tally::dtype::f64;
};

namespace {

template <class T>
class typed_scanner final : public scanner::impl {
  using K = typename kept<T>::type;

 public:
  explicit typed_scanner(int columns)
      : columns_(columns), lo_(columns), hi_(columns), any_(columns) {}

  void add(const void* data, std::int64_t values) override {
    const T* p = static_cast<const T*>(data);
    const std::int64_t rows = values / columns_;
    for (int c = 0; c < columns_; ++c) {
      K lo = lo_[c], hi = hi_[c];
      bool any = any_[c];
      const bool keep = !kept_values.empty();
      for (std::int64_t r = 0; r < rows; ++r) {
        const K x = widen(p[r * columns_ + c]);
        if constexpr (std::is_floating_point_v<K>) {
          if (std::isnan(x)) continue;
        }
        if (keep) {
          std::vector<unsigned char>& bytes = kept_values[c];
          const std::size_t at = bytes.size();
          bytes.resize(at + sizeof(T));
          std::memcpy(bytes.data() + at, &p[r * columns_ + c], sizeof(T));
        }
        if (!any) {
          lo = hi = x;
          any = true;
        } else if (x < lo) {
          lo = x;
        } else if (x > hi) {
          hi = x;
        }
      }
      lo_[c] = lo;
      hi_[c] = hi;
      any_[c] = any;
    }
  }

  std::vector<extrema> result() const override {
    std::vector<extrema> out(columns_);
    for (int c = 0; c < columns_; ++c) {
      out[c].any = any_[c];
      out[c].lo = lo_[c];
      out[c].hi = hi_[c];
    }
    return out;
  }

 private:
  int columns_;
  std::vector<K> lo_, hi_;
  std::vector<char> any_;
};

/// The sample types in the order of tally::dtype's enumerators (checked below).
using sample_types =
    std::tuple<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t, std::uint32_t, std::int32_t,
               std::uint64_t, std::int64_t, tally::half, tally::bfloat16, float, double>;

template <std::size_t... I>
std::unique_ptr<scanner::impl> make_scanner(tally::dtype t, int columns,
                                            std::index_sequence<I...>) {
  static_assert(
      ((tally::dtype_of<std::tuple_element_t<I, sample_types>> == static_cast<tally::dtype>(I)) &&
       ...));
  std::unique_ptr<scanner::impl> out;
  ((static_cast<std::size_t>(t) == I
        ? void(out =
                   std::make_unique<typed_scanner<std::tuple_element_t<I, sample_types>>>(columns))
        : void()),
   ...);
  return out;
}

}  // namespace

scanner::scanner(tally::dtype type, int columns, bool keep_values)
    : impl_(make_scanner(type, columns,
                         std::make_index_sequence<std::tuple_size_v<sample_types>>())) {
  if (keep_values) impl_->kept_values.resize(columns);
  impl_->type = type;
}
scanner::~scanner() = default;
void scanner::add(const void* data, std::int64_t values) { impl_->add(data, values); }
std::vector<extrema> scanner::result() const { return impl_->result(); }
tally::view scanner::values(int c) const {
  const std::vector<unsigned char>& bytes = impl_->kept_values.at(c);
  tally::view v;
  v.type = impl_->type;
  v.data = bytes.data();
  v.size = static_cast<std::int64_t>(bytes.size() / tally::size_of(v.type));
  return v;
}

}  // namespace tally_cli
