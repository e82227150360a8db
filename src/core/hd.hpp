// TALLY_HD marks functions shared by host code and CUDA device code (the bin rule).
#pragma once

#if defined(__CUDACC__)
#define TALLY_HD __host__ __device__ __forceinline__
#else
#define TALLY_HD inline
#endif
