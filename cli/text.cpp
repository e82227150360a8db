// Text tables of numbers: lines, fields, the header, the columns kept.
#include "text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

#include "args.hpp"
#include "errors.hpp"

namespace tally_cli {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (is_blank(s.front()) || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (is_blank(s.back()) || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

/// The field as a number, as numpy.loadtxt's float reads it; nullopt where it is not one.
std::optional<double> number(std::string_view field) {
  std::string_view s = trimmed(field);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);  // from_chars takes '-' only
  if (s.empty() || s.front() == '+') return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  // Out of range: from_chars leaves v alone; numpy reads an overflow as inf, an underflow as 0.
  if (ec == std::errc::result_out_of_range && end == s.data() + s.size()) {
    const bool negative = s.front() == '-';
    const std::size_t e = s.find_first_of("eE");
    const bool tiny = e != std::string_view::npos && s.find('-', e) == e + 1;
    return tiny ? (negative ? -0.0 : 0.0) : (negative ? -HUGE_VAL : HUGE_VAL);
  }
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

/// The fields of one line: split at `delimiter`, or at runs of blanks where it is 0.
std::vector<std::string_view> fields(std::string_view line, char delimiter) {
  std::vector<std::string_view> out;
  if (delimiter) {
    std::size_t at = 0;
    for (;;) {
      const std::size_t next = line.find(delimiter, at);
      out.push_back(trimmed(line.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at)));
      if (next == std::string_view::npos) break;
      at = next + 1;
    }
    return out;
  }
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (is_blank(line[i]) || line[i] == '\r')) ++i;
    const std::size_t start = i;
    while (i < line.size() && !is_blank(line[i]) && line[i] != '\r') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

char delimiter_of(const std::string& given, std::string_view first_row) {
  if (given.empty()) {
    for (const char c : {',', ';', '\t'})
      if (first_row.find(c) != std::string_view::npos) return c;
    return 0;
  }
  if (given == "tab" || given == "\\t") return '\t';
  if (given == "space" || given == "whitespace") return 0;
  if (given.size() != 1 || given == "#" || given == "\n" || given == "\r")
    throw usage_error("--delimiter takes one character (or tab, space), got '" + given + "'");
  return given[0] == ' ' ? 0 : given[0];
}

std::string unquoted(std::string_view name) {
  if (name.size() >= 2 && (name.front() == '"' || name.front() == '\'') && name.back() == name.front())
    name = name.substr(1, name.size() - 2);
  return std::string(name);
}

/// The indices of the columns --column names, among `count` (names: the header's, if any).
std::vector<int> columns_kept(const std::string& given, const std::vector<std::string>& names, bool header,
                              int count) {
  std::vector<int> kept;
  if (given.empty()) {
    for (int c = 0; c < count; ++c) kept.push_back(c);
    return kept;
  }
  for (const std::string& item : split_commas(given)) {
    const std::string_view want = trimmed(item);
    int index = -1;
    const auto [end, ec] = std::from_chars(want.data(), want.data() + want.size(), index);
    if (ec == std::errc() && end == want.data() + want.size()) {
      if (index < 0 || index >= count)
        throw usage_error("--column " + std::string(want) + ": the input has columns 0 to " + std::to_string(count - 1));
    } else {
      const auto at = header ? std::find(names.begin(), names.end(), std::string(want)) : names.end();
      if (at == names.end())
        throw usage_error("--column " + std::string(want) + ": no such column" +
                          (header ? std::string(" in the header") : std::string(" (the input has no header; give an index)")));
      index = static_cast<int>(at - names.begin());
    }
    kept.push_back(index);
  }
  return kept;
}

}  // namespace

bool looks_like_text(std::string_view head) {
  bool digit = false;
  for (const char ch : head) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return false;
    if (c == 0x7f) return false;
    digit = digit || (c >= '0' && c <= '9');
  }
  return digit;
}

text_table parse_text(std::string_view text, const std::string& path, const text_options& options) {
  text_table t;
  std::vector<int> kept;
  std::int64_t line_no = 0;
  bool first = true;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    if (trimmed(line).empty()) continue;
    const std::string where = path + ", line " + std::to_string(line_no);
    if (first) {
      first = false;
      t.delimiter = delimiter_of(options.delimiter, line);
      const std::vector<std::string_view> f = fields(line, t.delimiter);
      t.file_columns = static_cast<int>(f.size());
      std::vector<std::string> names;
      for (const auto& x : f) {
        t.header = t.header || !number(x);
        names.push_back(unquoted(x));
      }
      kept = columns_kept(options.columns, names, t.header, t.file_columns);
      for (const int c : kept) t.names.push_back(t.header ? names[c] : std::to_string(c));
      if (t.header) continue;
    }
    const std::vector<std::string_view> f = fields(line, t.delimiter);
    if (static_cast<int>(f.size()) != t.file_columns)
      throw failure(where + ": " + std::to_string(f.size()) + (f.size() == 1 ? " field" : " fields") +
                    " where the first row has " + std::to_string(t.file_columns));
    for (const int c : kept) {
      const std::optional<double> v = number(f[c]);
      if (!v)
        throw failure(where + ", column " + std::to_string(c) + ": '" + std::string(f[c]) + "' is not a number");
      t.values.push_back(*v);
    }
  }
  if (first) t.file_columns = 0;
  return t;
}

}  // namespace tally_cli
