// Reductions: sum, min, max, mean over a whole array or along the last axis of a 2-D array,
// with the same bits on every run (fixed order, no floating-point atomics). CUDA-free header.
#pragma once

#include <cstdint>
#include <string_view>

#include "tally/patterns/array.hpp"
#include "tally/dtype.hpp"

namespace tally {

enum class reduce_op : std::uint8_t { sum, min, max, mean };
std::string_view name_of(reduce_op op);

/// The result types a reduction accepts (the result type is the accumulation type):
///  - sum, mean of f32, f16, bf16: f32 or f64 (accumulated in that type);
///  - sum of i32: i64 (exact); mean of i32: f64 (the exact i64 sum divided once);
///  - min, max of f32, f16, bf16 or any integer type: the input type (the result is one of the
///    elements; NaN if any is NaN).
/// Returns whether (op, input, result) is one of these.
bool reduce_supported(reduce_op op, dtype input, dtype result);

/// *result = op over x[0 .. n). `result` points to one element of type `result_type`, in host or
/// device memory. An empty sum is 0, an empty mean NaN, and an empty min or max an error (as
/// numpy). The bits depend only on the data, n and the backend (and the CUDA device's
/// multiprocessor count), never on the run.
void reduce(reduce_op op, dtype type, const void* x, std::int64_t n, dtype result_type, void* result,
            const run_options& options = {});

/// result[r] = op over row r of a rows x cols matrix whose row r starts at element
/// r * row_stride of x (row_stride >= cols; elements of a row are contiguous). `result` holds
/// `rows` elements of `result_type`. Empty rows as in reduce().
void reduce_rows(reduce_op op, dtype type, const void* x, std::int64_t rows, std::int64_t cols,
                 std::int64_t row_stride, dtype result_type, void* result, const run_options& options = {});

}  // namespace tally
