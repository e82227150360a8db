// Elementwise patterns: unary activations over contiguous arrays, and binary arithmetic with
// numpy broadcasting over strided N-D arrays. CPU and CUDA backends; CUDA-free header.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tally/patterns/array.hpp"
#include "tally/patterns/map_strategy.hpp"
#include "tally/dtype.hpp"

namespace tally {

/// The activations (formulas in tally/patterns/ops.hpp). Each is computed in f32 and rounded once
/// to the element type. Accuracy against an f64 reference, as the tests assert it: see docs/patterns.md.
enum class unary_op : std::uint8_t { sigmoid, relu, silu, gelu_tanh, gelu_erf, tanh };
std::string_view name_of(unary_op op);

/// How unary() runs: run_options and the CUDA backend's map strategy (the same bits from every
/// strategy; the CPU backend has one loop and takes automatic only).
struct unary_options : run_options {
  map_strategy strategy = map_strategy::automatic;
};

/// y[i] = op(x[i]) for i < n. type: f32, f16 or bf16 (both arrays). Any length and any
/// element-aligned address; x == y computes in place; any other overlap is an error.
void unary(unary_op op, dtype type, const void* x, void* y, std::int64_t n, const unary_options& options);
void unary(unary_op op, dtype type, const void* x, void* y, std::int64_t n, const run_options& options = {});

template <class T> void sigmoid(const T* x, T* y, std::int64_t n, const run_options& o = {}) {
  unary(unary_op::sigmoid, dtype_of<T>, x, y, n, o);
}
template <class T> void relu(const T* x, T* y, std::int64_t n, const run_options& o = {}) {
  unary(unary_op::relu, dtype_of<T>, x, y, n, o);
}
template <class T> void silu(const T* x, T* y, std::int64_t n, const run_options& o = {}) {
  unary(unary_op::silu, dtype_of<T>, x, y, n, o);
}
template <class T> void gelu_tanh(const T* x, T* y, std::int64_t n, const run_options& o = {}) {
  unary(unary_op::gelu_tanh, dtype_of<T>, x, y, n, o);
}
template <class T> void gelu_erf(const T* x, T* y, std::int64_t n, const run_options& o = {}) {
  unary(unary_op::gelu_erf, dtype_of<T>, x, y, n, o);
}
template <class T> void tanh(const T* x, T* y, std::int64_t n, const run_options& o = {}) {
  unary(unary_op::tanh, dtype_of<T>, x, y, n, o);
}

enum class binary_op : std::uint8_t { add, sub, mul, div };
std::string_view name_of(binary_op op);

/// numpy's result type of two of f16, bf16, f32: the same type, or f32 for any mix
/// (numpy.result_type; f16 with bf16 gives f32 as in torch). Throws for other types.
dtype promote(dtype a, dtype b);
/// numpy's broadcast shape of two shapes (right-aligned; a dimension of 1 stretches).
/// Throws tally::error, naming both shapes, where they do not broadcast.
std::vector<std::int64_t> broadcast_shape(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b);

/// out = a op b elementwise with numpy broadcasting over up to 8 dimensions; any strides. out's
/// shape must be broadcast_shape(a, b) and its type promote(a.type, b.type); the operation is
/// computed in f32 and rounded once, which is the correctly rounded result in every type.
/// out may be the same array as a or b (same data, type and layout, not broadcast): in place.
/// Any other overlap of out with an input is an error.
void binary(binary_op op, const array& a, const array& b, const out_array& out, const run_options& options = {});

inline void add(const array& a, const array& b, const out_array& out, const run_options& o = {}) {
  binary(binary_op::add, a, b, out, o);
}
inline void sub(const array& a, const array& b, const out_array& out, const run_options& o = {}) {
  binary(binary_op::sub, a, b, out, o);
}
inline void mul(const array& a, const array& b, const out_array& out, const run_options& o = {}) {
  binary(binary_op::mul, a, b, out, o);
}
inline void div(const array& a, const array& b, const out_array& out, const run_options& o = {}) {
  binary(binary_op::div, a, b, out, o);
}

}  // namespace tally
