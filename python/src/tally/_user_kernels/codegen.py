"""The CUDA source of a user kernel for a call's bound types: prelude.cuh (the device side:
16-bit floats, shapes, strides, folds) in front, the placeholders' typedefs, the user's code as
device functions, and the kernels that walk the arrays. NVRTC compiles it (the extension, once
per source and architecture)."""

import os

from .bind import ITEMSIZE
from .parse import reads_before_writing

# C types of the element types (tally's type names); the 16-bit floats are prelude.cuh's.
CTYPES = {"bool": "bool", "i8": "signed char", "u8": "unsigned char", "i16": "short", "u16": "unsigned short",
          "i32": "int", "u32": "unsigned int", "i64": "long long", "u64": "unsigned long long",
          "f16": "tally_float16", "bf16": "tally_bfloat16", "f32": "float", "f64": "double"}
THREADS = 256  # threads a block of the generated kernels (their __launch_bounds__)
MAX_DIMS = 8  # dimensions a shape or strides argument holds: prelude.cuh's tally_rt::max_dims
# Beside this file (os.path: pathlib would cost `import tally` a few milliseconds).
_PRELUDE_PATH = os.path.join(os.path.dirname(__file__), "prelude.cuh")


def _prelude():
    """The device side every generated source starts with."""
    with open(_PRELUDE_PATH) as f:
        return f.read()


def _typedefs(placeholders):
    """The placeholders' bound types as C typedefs (T -> float, say)."""
    return "\n".join(f"typedef {CTYPES[t]} {name};" for name, t in sorted(placeholders.items()))


def items_of(bound):
    """Elements a thread takes per step on the contiguous path: one 16-byte vector of the widest
    non-raw array's type (outputs not given count with their bound type)."""
    sizes = [ITEMSIZE[s.type if s is not None else t] for p, s, t in zip(bound.params, bound.sources, bound.types)
             if not p.raw and (s is not None or p.output)]
    return 16 // max(sizes or [1])


def elementwise_source(kernel, bound, given, items):
    """The CUDA source of an ElementwiseKernel `kernel` for a call's bound arguments: its operation
    as a device function, a kernel for any layout (_strided) and one for contiguous arrays
    (_contiguous, `items` elements a thread and step). `given`: per output, whether the call
    gives it."""
    n_in = len(kernel.in_params)
    name = kernel.name
    op_params, call_args, kernel_params, contiguous_params = [], [], [], []
    loads, loads_vec, loads_elem, stores, stores_vec, stores_elem, packs = [], [], [], [], [], [], []
    pack_stores = []
    offsets_strided = []
    for k, p in enumerate(bound.params):
        vt = CTYPES[bound.types[k]]
        src = bound.sources[k]
        st = CTYPES[src.type] if src is not None else (vt if p.output else None)
        if p.raw:
            qual = "" if p.output else "const "
            op_params.append(f"const tally_rt::raw<{qual}{st}>& {p.name}")
            kernel_params.append(f"const tally_rt::raw<{qual}{st}> {p.name}")
            contiguous_params.append(kernel_params[-1])
            call_args.append(p.name)
            continue
        if st is None:  # a scalar input
            op_params.append(f"const {vt} {p.name}")
            kernel_params.append(f"const {vt} {p.name}")
            contiguous_params.append(kernel_params[-1])
            call_args.append(p.name)
            continue
        v, ptr = f"_v_{p.name}", f"_p_{p.name}"
        call_args.append(v)
        if p.output:
            preload = k >= n_in and given[k - n_in] and reads_before_writing(kernel.operation, p.name)
            op_params.append(f"{vt}& {p.name}")
            kernel_params += [f"{st}* const {ptr}", f"const tally_rt::strides _s_{p.name}"]
            contiguous_params.append(f"{st}* const {ptr}")
            offsets_strided.append(f"const long long _o_{p.name} = tally_rt::dot(_shape, _s_{p.name}, _c);")
            loads.append(f"{vt} {v}" + (f" = {ptr}[_o_{p.name}];" if preload else ";"))
            loads_elem.append(f"{vt} {v}" + (f" = {ptr}[_i];" if preload else ";"))
            packs.append(f"tally_rt::pack<{st}, {items}> _k_{p.name}" +
                         (f" = *reinterpret_cast<const tally_rt::pack<{st}, {items}>*>({ptr} + _i0);"
                          if preload else ";"))
            loads_vec.append(f"{vt} {v}" + (f" = _k_{p.name}.v[_j];" if preload else ";"))
            stores.append(f"{ptr}[_o_{p.name}] = {v};")
            stores_elem.append(f"{ptr}[_i] = {v};")
            stores_vec.append(f"_k_{p.name}.v[_j] = {v};")
            pack_stores.append(f"*reinterpret_cast<tally_rt::pack<{st}, {items}>*>({ptr} + _i0) = _k_{p.name};")
        else:
            op_params.append(f"const {vt} {p.name}")
            kernel_params += [f"const {st}* const {ptr}", f"const tally_rt::strides _s_{p.name}"]
            contiguous_params.append(f"const {st}* const {ptr}")
            offsets_strided.append(f"const long long _o_{p.name} = tally_rt::dot(_shape, _s_{p.name}, _c);")
            loads.append(f"const {vt} {v} = static_cast<{vt}>({ptr}[_o_{p.name}]);")
            loads_elem.append(f"const {vt} {v} = static_cast<{vt}>({ptr}[_i]);")
            packs.append(f"const tally_rt::pack<{st}, {items}> _k_{p.name} = "
                         f"*reinterpret_cast<const tally_rt::pack<{st}, {items}>*>({ptr} + _i0);")
            loads_vec.append(f"const {vt} {v} = static_cast<{vt}>(_k_{p.name}.v[_j]);")
    call = f"{name}_op(_i, _ind, {', '.join(call_args)});"
    call_vec = f"{name}_op(_i0 + _j, _ind, {', '.join(call_args)});"
    n4, n6 = "\n    ", "\n      "
    return f"""{_prelude()}
{_typedefs(bound.placeholders)}
{kernel.preamble}

__device__ __forceinline__ void {name}_op(const long long i, const tally_rt::index& _ind, {', '.join(op_params)}) {{
{kernel.operation}
;
}}

// Any layout: each element's offsets from its C-order index.
extern "C" __global__ void __launch_bounds__({THREADS}) {name}_strided(const tally_rt::shape _shape, {', '.join(kernel_params)}) {{
  const tally_rt::index _ind{{_shape.n}};
  const long long _step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long _i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; _i < _shape.n; _i += _step) {{
    long long _c[tally_rt::max_dims];
    tally_rt::unravel(_shape, _i, _c);
    {n4.join(offsets_strided)}
    {n4.join(loads)}
    {call}
    {n4.join(stores)}
  }}
}}

// Every array contiguous: {items} neighbouring elements per thread and step, as one 16-byte vector
// of the widest type where every array is aligned for it (_vectors), the tail one by one.
extern "C" __global__ void __launch_bounds__({THREADS}) {name}_contiguous(const long long _n, const int _vectors, {', '.join(contiguous_params)}) {{
  const tally_rt::index _ind{{_n}};
  const long long _step = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long _first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long _chunks = _vectors ? _n / {items} : 0;
  for (long long _chunk = _first; _chunk < _chunks; _chunk += _step) {{
    const long long _i0 = _chunk * {items};
    {n4.join(packs)}
#pragma unroll
    for (int _j = 0; _j < {items}; ++_j) {{
      {n6.join(loads_vec)}
      {call_vec}
      {n6.join(stores_vec)}
    }}
    {n4.join(pack_stores)}
  }}
  for (long long _i = _chunks * {items} + _first; _i < _n; _i += _step) {{
    {n4.join(loads_elem)}
    {call}
    {n4.join(stores_elem)}
  }}
}}
"""


def reduction_source(kernel, bound, given, reduce_type):
    """The CUDA source of a ReductionKernel `kernel` for a call's bound arguments, folding in
    `reduce_type`: its expressions as device functions, the reduction kernels (_reduce_flat,
    _reduce) and the fold of split reductions' partial results (_finish). `given`: per
    output, whether the call gives it."""
    name, n_in = kernel.name, len(kernel.in_params)
    map_params, map_args, scalar_params, scalar_args = [], [], [], []
    in_params, loads_fast, loads_general, bases = [], [], [], []
    out_params, out_kernel, out_loads, out_stores, out_args, offsets = [], [], [], [], [], []
    for k, p in enumerate(bound.params):
        vt = CTYPES[bound.types[k]]
        src = bound.sources[k]
        if k < n_in and src is None:
            scalar_params.append(f"const {vt} {p.name}")
            scalar_args.append(p.name)
            map_params.append(f"const {vt} {p.name}")
            map_args.append(p.name)
        elif k < n_in:
            st = CTYPES[src.type]
            ptr = f"_p_{p.name}"
            map_params.append(f"const {vt} {p.name}")
            map_args.append(f"_v_{p.name}")
            in_params += [f"const {st}* const {ptr}", f"const tally_rt::strides _sk_{p.name}",
                          f"const tally_rt::strides _sr_{p.name}"]
            bases.append(f"const long long _b_{p.name} = tally_rt::dot(_kept, _sk_{p.name}, _c);")
            loads_fast.append(f"const {vt} _v_{p.name} = static_cast<{vt}>({ptr}[_b_{p.name} + _r * _sr_{p.name}.s[0]]);")
            loads_general.append(f"const {vt} _v_{p.name} = static_cast<{vt}>({ptr}[_b_{p.name} + tally_rt::dot(_red, _sr_{p.name}, _d)]);")
        else:
            preload = given[k - n_in] and reads_before_writing(kernel.post_map_expr, p.name)
            out_params.append(f"{vt}& {p.name}")
            out_kernel += [f"{vt}* const _p_{p.name}", f"const tally_rt::strides _s_{p.name}"]
            at = f"_at_{p.name}"
            offsets.append(f"const long long {at} = tally_rt::dot(_kept, _s_{p.name}, _c);")
            out_loads.append(f"{vt} _v_{p.name}" + (f" = _p_{p.name}[{at}];" if preload else ";"))
            out_stores.append(f"_p_{p.name}[{at}] = _v_{p.name};")
            out_args.append(f"_v_{p.name}")
    rt = CTYPES[reduce_type]
    post_args = ", ".join(["_acc", "_in_ind", "_out_ind"] + scalar_args + out_args)
    n4, n6, n8, n10 = "\n    ", "\n      ", "\n        ", "\n          "
    reduce_params = ", ".join(["const tally_rt::shape _kept", "const tally_rt::shape _red", "const long long _splits",
                               "const int _warp_groups"] + in_params + scalar_params + out_kernel +
                              ["_type_reduce* const _partials"])
    reduce_args = ", ".join(p.split()[-1] for p in reduce_params.split(", "))
    write = f"""{n6.join(out_loads)}
      {name}_post({post_args});
      {n6.join(out_stores)}"""
    return f"""{_prelude()}
{_typedefs(bound.placeholders)}
typedef {rt} _type_reduce;
{kernel.preamble}

__device__ __forceinline__ _type_reduce {name}_map(const tally_rt::index& _in_ind, const tally_rt::index& _out_ind{''.join(', ' + m for m in map_params)}) {{
  return static_cast<_type_reduce>({kernel.map_expr});
}}
__device__ __forceinline__ _type_reduce {name}_combine(const _type_reduce& a, const _type_reduce& b) {{
  return static_cast<_type_reduce>({kernel.reduce_expr});
}}
__device__ __forceinline__ void {name}_post(const _type_reduce& a, const tally_rt::index& _in_ind, const tally_rt::index& _out_ind{''.join(', ' + s for s in scalar_params + out_params)}) {{
{kernel.post_map_expr}
;
}}
struct {name}_fold {{
  __device__ _type_reduce operator()(const _type_reduce& a, const _type_reduce& b) const {{ return {name}_combine(a, b); }}
}};
__device__ __forceinline__ _type_reduce {name}_identity() {{ return static_cast<_type_reduce>({kernel.identity}); }}

// Output o's elements (split s of _splits) are folded by one group of lanes: a warp
// (_warp_groups) or the block; with one split the group writes post_map of the fold, else its
// partial fold to _partials[o * _splits + s] for {name}_finish. _flat: the reduced dimensions
// merged into one (the loop without index arithmetic), else any rank.
template <bool _flat>
__device__ __forceinline__ void {name}_reduce_body({reduce_params}) {{
  const tally_rt::index _in_ind{{_kept.n * _red.n}}, _out_ind{{_kept.n}};
  const int _group = _warp_groups ? 32 : blockDim.x;
  const long long _lane = threadIdx.x % _group;
  const long long _per_block = blockDim.x / _group;
  const long long _work = _kept.n * _splits;
  const long long _chunk = (_red.n + _splits - 1) / _splits;
  const {name}_fold _fold;
  for (long long _w = blockIdx.x * _per_block + threadIdx.x / _group; _w < _work; _w += gridDim.x * _per_block) {{
    const long long _o = _w / _splits, _s = _w - _o * _splits;
    long long _c[tally_rt::max_dims];
    tally_rt::unravel(_kept, _o, _c);
    {n4.join(bases + offsets)}
    const long long _lo = _s * _chunk, _hi = _lo + _chunk < _red.n ? _lo + _chunk : _red.n;
    _type_reduce _acc = {name}_identity();
    if (_flat) {{
      // Tiles of 8 elements a lane, all loaded before any is folded (8 loads in flight), folded
      // in order; then the rest one by one.
      long long _r0 = _lo + _lane;
      for (; _r0 + 7 * _group < _hi; _r0 += 8 * _group) {{
        _type_reduce _t[8];
#pragma unroll
        for (int _u = 0; _u < 8; ++_u) {{
          const long long _r = _r0 + _u * _group;
          {n10.join(loads_fast)}
          _t[_u] = {name}_map(_in_ind, _out_ind{''.join(', ' + a for a in map_args)});
        }}
#pragma unroll
        for (int _u = 0; _u < 8; ++_u) _acc = {name}_combine(_acc, _t[_u]);
      }}
      for (long long _r = _r0; _r < _hi; _r += _group) {{
        {n8.join(loads_fast)}
        _acc = {name}_combine(_acc, {name}_map(_in_ind, _out_ind{''.join(', ' + a for a in map_args)}));
      }}
    }} else {{
      for (long long _r = _lo + _lane; _r < _hi; _r += _group) {{
        long long _d[tally_rt::max_dims];
        tally_rt::unravel(_red, _r, _d);
        {n8.join(loads_general)}
        _acc = {name}_combine(_acc, {name}_map(_in_ind, _out_ind{''.join(', ' + a for a in map_args)}));
      }}
    }}
    _acc = _warp_groups ? tally_rt::warp_fold(_acc, _fold) : tally_rt::block_fold(_acc, _fold, {name}_identity());
    if (_lane != 0) continue;
    if (_splits > 1) {{
      _partials[_w] = _acc;
    }} else {{
      {write}
    }}
  }}
}}

// Each its own kernel, for its own registers: the flat loop fits 64 (4 blocks a multiprocessor,
// the launch's one wave).
extern "C" __global__ void __launch_bounds__({THREADS}, 4) {name}_reduce_flat({reduce_params}) {{
  {name}_reduce_body<true>({reduce_args});
}}
extern "C" __global__ void __launch_bounds__({THREADS}) {name}_reduce({reduce_params}) {{
  {name}_reduce_body<false>({reduce_args});
}}

// The partial folds of each output, one warp an output, then post_map.
extern "C" __global__ void __launch_bounds__({THREADS}) {name}_finish(const tally_rt::shape _kept, const long long _splits, const _type_reduce* const _partials, {''.join(s + ', ' for s in scalar_params + out_kernel)}const long long _elements) {{
  const tally_rt::index _in_ind{{_kept.n * _elements}}, _out_ind{{_kept.n}};
  const long long _lane = threadIdx.x % 32;
  const long long _warps = static_cast<long long>(gridDim.x) * (blockDim.x / 32);
  const {name}_fold _fold;
  for (long long _o = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; _o < _kept.n; _o += _warps) {{
    _type_reduce _acc = {name}_identity();
    for (long long _k = _lane; _k < _splits; _k += 32) _acc = {name}_combine(_acc, _partials[_o * _splits + _k]);
    _acc = tally_rt::warp_fold(_acc, _fold);
    if (_lane == 0) {{
      long long _c[tally_rt::max_dims];
      tally_rt::unravel(_kept, _o, _c);
      {n6.join(offsets)}
      {write}
    }}
  }}
}}
"""
