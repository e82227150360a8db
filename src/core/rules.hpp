// Builds the bin-rule parameters of an axis (shared by every backend).
#pragma once

#include <string>
#include <vector>

#include "core/bin_rule.hpp"
#include "tally/axis.hpp"

namespace tally::detail {

edge_rounding rounding_of(dtype edge_type);
/// v with 17 significant digits (enough to tell any two doubles apart), for messages.
std::string exact_text(double v);
/// The rule for a regular axis; `table`, if given, must hold axis.edges().
regular_rule make_regular_rule(const axis& a, const double* table = nullptr);
/// Narrows a regular rule's guard to what its edges (bins + 1, as axis.edges()) measure, where
/// the bound from the edge type's rounding alone is wider (f32 edges at 2^20 bins: every sample
/// looked at two edges).
void tighten_guard(regular_rule& r, const double* edges);
/// From this many bins on, a variable axis whose edges lie near a line takes the line rule:
/// below, its bucket table (about four buckets a bin) settles a sample in one lookup.
constexpr std::int64_t kLineMinBins = std::int64_t{1} << 16;
/// The line rule over a variable axis' edges where every edge lies within a quarter bin of the
/// line through the outer ones (numpy's float32 linspace), from kLineMinBins bins and without
/// integer edges; else bins 0. The backends then bin by it (line_binner).
line_rule variable_line(const axis& a);
/// For f32 samples on a variable axis of any bin count whose edges lie near their line: the
/// regular rule's f32 form over that line (fast32 set where its bound holds, else false), its
/// edges the axis' own. numpy's float32 linspace of a range from the data makes such axes.
regular_rule variable_line32(const axis& a);
/// The rule for a variable axis; with `buckets` (from variable_buckets) it narrows its search.
variable_rule make_variable_rule(const axis& a, const std::vector<std::int64_t>* buckets = nullptr);
/// The bucket table of a variable axis: variable_bucket_count(bins) + 1 entries.
std::vector<std::int64_t> variable_buckets(const axis& a);
/// The f32 form of a variable axis' rule: fills `edges` (bins + 1, rounded up to f32) and
/// `buckets` (variable_bucket_count(bins) + 1), at which the rule points.
variable_rule32 make_variable_rule32(const axis& a, std::vector<float>& edges, std::vector<bucket32>& buckets);
/// About four buckets per bin, at least 64, at most 2^16.
std::int64_t variable_bucket_count(std::int64_t bins);
/// The rule of an integer axis, or of a regular one whose edges are unit integers (closed).
integer_rule make_integer_rule(const axis& a);
/// The rule samples of type `sample` are binned by on axis `a`: the integer rule for integer
/// samples on a regular axis of unit integer edges (the same bins: the edges and the samples
/// are exact integers), else the axis' own. Every backend and the planner ask this.
axis_kind rule_kind(const axis& a, dtype sample);
/// Bytes of the tables a backend uploads for the rule samples of type `sample` take on this
/// axis (regular: the edges; variable: the edges and the buckets; integer: none).
std::int64_t table_bytes(const axis& a, dtype sample);

}  // namespace tally::detail
