// Device histograms summed across GPUs with NCCL: all_reduce and reduce of a device_histogram's
// cells over a communicator, and a sharded fill for one process driving several GPUs. No CUDA or
// NCCL header is needed: a communicator is NCCL's own ncclComm_t (a `ncclComm*`, declared here
// so that a wrong argument fails to compile), streams are `void*` (a cudaStream_t; nullptr is
// the default stream), as in tally/device.hpp.
//
// tally finds NCCL at run time in the process (the library that made the communicator, or
// libnccl.so.2), so linking tally adds no NCCL dependency. In a build without NCCL support
// (TALLY_NCCL=OFF, or no nccl.h where CMake looked) the functions are declared and throw
// tally::error saying so; nccl_available() tells which build this is.
#pragma once

#include <vector>

#include "tally/device.hpp"

struct ncclComm;  // NCCL's communicator; ncclComm_t is `ncclComm*`

namespace tally {

/// Whether this build of tally has NCCL support (TALLY_NCCL at configure time).
bool nccl_available();

/// Sums the cells of every rank's histogram into every rank's histogram, on `stream` (stream
/// ordered, no host synchronisation): counts as u64 (exact), sums of weights as f64 or, with
/// options::exact_sums, as their exact words (one fill's sums bit for bit), and the flow
/// counters (exact). Every rank of `comm` calls it with a histogram of the same axes and
/// options; NCCL cannot check that (a histogram of another cell count reads or writes past its
/// cells on some rank), so check_same_layout checks it where in doubt. The histogram must be on
/// the communicator's device and outlive the reduction (free it after `stream` reaches it, or
/// use the stream of its fills, which its destructor frees in order of).
///
/// Counts equal one fill of all ranks' samples exactly. Exact sums (options::exact_sums) travel
/// as digits that NCCL's u64 sum adds without carries (71 words a cell, in temporary memory from
/// the histogram's allocator on `stream`), carried back into the words and rounded after it: they equal one
/// fill of all the data bit for bit, on every run. For such a histogram call it outside any
/// ncclGroupStart/End of the caller's (one thread a device, or sharded_fill for one thread that
/// drives several) and with a blocking communicator: a group or a non-blocking communicator would
/// enqueue the collective after the carrying. Plain sums of weights are f64 values added in NCCL's
/// order (ring or tree, by message size and topology): a sum equals one fill's bits only where
/// every partial sum is exact (integer weights below 2^53, say); otherwise it may differ from one
/// fill in the last bits and from run to run of another NCCL configuration.
///
/// With a blocking communicator (NCCL's default) errors raise tally::error with NCCL's message;
/// with a non-blocking one the call may return with the work still being enqueued, and the
/// caller polls ncclCommGetAsyncError as for any NCCL call.
void all_reduce(device_histogram& h, ncclComm* comm, void* stream = nullptr);

/// As all_reduce, but only the rank `root` receives the sums; the other ranks' cells keep their
/// own partial histograms.
void reduce(device_histogram& h, int root, ncclComm* comm, void* stream = nullptr);

/// Checks that every rank of `comm` holds a histogram of the same layout (axes' kinds, bins and
/// edges; weighted; exact_sums; flow), with one all-reduce of two words, and throws tally::error on every
/// rank where they differ. A collective: every rank calls it. Waits for `stream` (it reads the
/// answer back), so call it once before reductions rather than with each one.
void check_same_layout(const device_histogram& h, ncclComm* comm, void* stream = nullptr);

/// One process driving several GPUs: fills per_device[i] with shards[i] (and weights[i], where
/// weights is not empty) on streams[i], then all-reduces the histograms over comms[i] in one
/// NCCL group (ncclGroupStart/End), so that every histogram ends up holding the histogram of
/// all shards. per_device[i], shards[i] (and weights[i]) must be on comms[i]'s device, the
/// communicators those of one clique (ncclCommInitAll over the devices); all vectors of one
/// length. Stream ordered: returns once the work is enqueued.
void sharded_fill(std::vector<device_histogram>& per_device, const std::vector<view>& shards,
                  const std::vector<ncclComm*>& comms, const std::vector<void*>& streams,
                  const std::vector<view>& weights = {});

}  // namespace tally
