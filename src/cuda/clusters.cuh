// Thread block clusters (sm_90 and newer) for the cluster strategy and count_into's write_once
// kernel. Code for an older architecture (a wheel's sm_80) compiles to a trap: the planner never
// chooses those kernels where the device lacks clusters (plan_request::device_clusters).
#pragma once

#include <cooperative_groups.h>

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define TALLY_CLUSTERS 1
#else
#define TALLY_CLUSTERS 0
#endif

namespace tally::detail::cuda {

/// Waits for every block of the cluster (and orders their shared-memory accesses).
__device__ __forceinline__ void cluster_sync() {
#if TALLY_CLUSTERS
  cooperative_groups::this_cluster().sync();
#else
  __trap();
#endif
}

/// Block `rank`'s copy of `p`, an address in this block's shared memory.
template <class T>
__device__ __forceinline__ T* cluster_shared(T* p, unsigned rank) {
#if TALLY_CLUSTERS
  return cooperative_groups::this_cluster().map_shared_rank(p, rank);
#else
  __trap();
  return p;
#endif
}

/// This block's rank in its cluster, and the cluster's number of blocks.
__device__ __forceinline__ unsigned cluster_rank() {
#if TALLY_CLUSTERS
  return cooperative_groups::this_cluster().block_rank();
#else
  __trap();
  return 0;
#endif
}
__device__ __forceinline__ unsigned cluster_blocks() {
#if TALLY_CLUSTERS
  return cooperative_groups::this_cluster().num_blocks();
#else
  __trap();
  return 1;
#endif
}

}  // namespace tally::detail::cuda
