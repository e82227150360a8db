// --text: a file's bytes counted as text: by letter in the groups of four of PMPP's text
// histogram (chapter 9: a-d, e-h, ..., u-x, y-z), by letter, or by byte value.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "readers.hpp"
#include "result.hpp"
#include "tally/axis.hpp"

namespace tally_cli {

enum class text_mode { groups, letters, bytes };

/// The modes' names, as --text=MODE takes them: groups, letters, bytes.
const std::vector<std::string>& text_mode_names();
/// The mode of one of text_mode_names(); a usage_error for any other name.
text_mode text_mode_from_name(const std::string& name);

/// How a mode counts: each byte through `map` first (none: as it is), then the histogram engine
/// bins it on `axis`; `named` says what the bins are (none: the byte values name them).
struct text_bins {
  std::optional<byte_map> map;
  tally::axis axis;
  std::optional<named_bins> named;
};
text_bins text_bins_of(text_mode mode);

}  // namespace tally_cli
