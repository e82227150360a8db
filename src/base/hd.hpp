// TALLY_HD marks functions shared by host code and CUDA device code (the bin rule);
// TALLY_HD_HOT additionally forces inlining, for the per-sample functions of the hot loops.
#pragma once

#if defined(__CUDACC__)
#define TALLY_HD __host__ __device__ inline
#define TALLY_HD_HOT __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#define TALLY_HD inline
#define TALLY_HD_HOT inline __attribute__((always_inline))
#else
#define TALLY_HD inline
#define TALLY_HD_HOT inline
#endif
