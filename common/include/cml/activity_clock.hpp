/// \file
/// The clock the timing harness reads a call's time from: the device's own record of the
/// work the call caused (CUPTI's Activity API), not events on one stream.
///
/// Once per process (the first instance() call, made by the harness before any code under
/// test runs) it subscribes to CUPTI's activity records of kernels (CONCURRENT_KERNEL, which
/// also delivers kernels launched from the device), copies (MEMCPY, and MEMCPY2 for
/// peer-to-peer copies) and sets (MEMSET): every kind of device work a call can cause
/// through the runtime (batch decompression, MEM_DECOMPRESS, is reached only through the
/// driver API, which no code under test may call). A call is timed as
///
///     begin():  cudaDeviceSynchronize(); flush every pending record and discard it
///     the call
///     end():    cudaDeviceSynchronize(); flush (forced) and collect the records
///
/// and its span is the earliest record's start to the latest record's end, over every
/// stream: work on a stream of the call's own, a copy after its kernel, a kernel it leaves
/// running when it returns, all land in the span. A call that caused no device work has
/// span 0 and `records == 0`.
///
/// The clock is unavailable, and the harness falls back to CUDA events (with its host-time
/// cross-check), when the library was built without CUPTI, when CUPTI refuses the
/// subscription (another profiler, ncu or compute-sanitizer, already holds it), when a probe
/// memset delivers no record, or when the environment variable CML_CLOCK is "events"
/// (to compare the two clocks on one machine). `status()` says which and why.
#pragma once

#include <cstdint>
#include <string>

namespace cml {

/// The device work one timed call caused, as the activity records tell it.
struct ActivitySpan {
  double ms = 0;              ///< earliest start to latest end; 0 when no record arrived
  std::uint64_t records = 0;  ///< kernels, copies and sets with timestamps
  std::uint64_t untimed = 0;  ///< records that came without timestamps (not in `ms`)
  std::uint64_t dropped = 0;  ///< records CUPTI could not store (the span may be short)
};

/// The process's CUPTI activity subscription (see the file comment).
class ActivityClock {
 public:
  /// The one clock; the first call subscribes (or finds out why it cannot).
  static ActivityClock& instance();

  bool available() const { return available_; }
  /// "cupti" or "events".
  const char* name() const { return available_ ? "cupti" : "events"; }
  /// One line: the record kinds subscribed to, or why the clock is unavailable.
  const std::string& status() const { return status_; }

  /// Synchronizes the device and discards every record delivered so far.
  void begin();
  /// Synchronizes the device, flushes the records and returns the span since begin().
  ActivitySpan end();

  ActivityClock(const ActivityClock&) = delete;
  ActivityClock& operator=(const ActivityClock&) = delete;

 private:
  ActivityClock();
  bool available_ = false;
  std::string status_;
};

}  // namespace cml
