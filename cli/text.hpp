// Numbers as text: CSV and whitespace-separated columns, as numpy.loadtxt reads them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tally_cli {

/// The options of a text input: which columns (indices from 0 or header names, comma-separated;
/// empty: every column) and the field delimiter (one character; empty: told by the first row:
/// ',', ';' or a tab where the row has one, else runs of spaces and tabs).
struct text_options {
  std::string columns;
  std::string delimiter;
};

/// A table of numbers read from text, row by row: `values` holds rows x names.size() numbers.
struct text_table {
  std::vector<double> values;
  std::vector<std::string> names;  // the header's names of the columns kept, or their indices
  bool header = false;
  char delimiter = 0;   // 0: whitespace
  int file_columns = 0;  // columns in the file (before --column)
};

/// Whether `head` (a file's first bytes) looks like text: no control characters but tab, line
/// feed and carriage return, and at least one digit.
bool looks_like_text(std::string_view head);

/// Parses `text` (a file named `path` in messages): lines split at '\n' ("\r\n" too), '#'
/// comments and blank lines skipped, a first row with a field that is not a number taken as the
/// header, every other field a number as numpy.loadtxt reads it (decimal or exponent form, a
/// sign, inf, nan). Throws failure naming the line and column of the first problem.
text_table parse_text(std::string_view text, const std::string& path, const text_options& options);

}  // namespace tally_cli
