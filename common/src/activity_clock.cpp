// The activity clock (see activity_clock.hpp). Built with CUPTI where CMake found it
// (CML_HAVE_CUPTI); otherwise the clock reports itself unavailable and the harness times
// with CUDA events.
#include "cml/activity_clock.hpp"

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "cml/buffer.hpp"
#include "cml/check.hpp"

#if CML_HAVE_CUPTI
#include <cupti.h>
#endif

namespace cml {

namespace {

bool events_forced() {
  const char* clock = std::getenv("CML_CLOCK");
  return clock != nullptr && std::strcmp(clock, "events") == 0;
}

}  // namespace

#if CML_HAVE_CUPTI

namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 20;
constexpr std::size_t kBufferAlign = 8;  // CUPTI's requirement for activity buffers

// What the records delivered since the last begin() add up to. CUPTI delivers buffers from
// the thread that flushes and from a worker thread of its own, hence the mutex. Never
// destroyed: CUPTI may still deliver a buffer while the process exits.
struct Collected {
  std::mutex mutex;
  std::uint64_t first = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t last = 0;
  std::uint64_t records = 0, untimed = 0, dropped = 0;
  void reset() {
    first = std::numeric_limits<std::uint64_t>::max();
    last = 0;
    records = untimed = dropped = 0;
  }
  void add(std::uint64_t start, std::uint64_t end) {
    if (start == 0 && end == 0) {
      ++untimed;
      return;
    }
    ++records;
    if (start < first) first = start;
    if (end > last) last = end;
  }
};

Collected& collected() {
  static Collected* c = new Collected;
  return *c;
}

// The start and end of a record of each kind. Every version of these records keeps them at
// the same place, so the oldest declarations, which every CUPTI since CUDA 11 still has,
// read the records of any version.
template <class Record>
void add(Collected& c, const CUpti_Activity* record) {
  const auto* r = reinterpret_cast<const Record*>(record);
  c.add(r->start, r->end);
}

// Buffers CUPTI has handed back, kept for the next request: a buffer made anew for every
// timed call would cost each call its first touch of fresh pages.
struct Pool {
  std::mutex mutex;
  std::vector<uint8_t*> free;
};

Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  Pool& p = pool();
  {
    const std::lock_guard<std::mutex> lock(p.mutex);
    if (!p.free.empty()) {
      *buffer = p.free.back();
      p.free.pop_back();
    } else {
      *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
      if (*buffer != nullptr) std::memset(*buffer, 0, kBufferBytes);
    }
  }
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t,
                               size_t valid) {
  Collected& c = collected();
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    CUpti_Activity* record = nullptr;
    while (buffer != nullptr &&
           cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      switch (record->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
          add<CUpti_ActivityKernel4>(c, record);
          break;
        case CUPTI_ACTIVITY_KIND_CDP_KERNEL:
          add<CUpti_ActivityCdpKernel>(c, record);
          break;
        case CUPTI_ACTIVITY_KIND_MEMCPY:
          add<CUpti_ActivityMemcpy>(c, record);
          break;
        case CUPTI_ACTIVITY_KIND_MEMCPY2:
          add<CUpti_ActivityMemcpyPtoP>(c, record);
          break;
        case CUPTI_ACTIVITY_KIND_MEMSET:
          add<CUpti_ActivityMemset>(c, record);
          break;
        default:
          break;
      }
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS) {
      c.dropped += dropped;
    }
  }
  if (buffer != nullptr) {
    Pool& p = pool();
    const std::lock_guard<std::mutex> lock(p.mutex);
    p.free.push_back(buffer);
  }
}

std::string cupti_error(const char* call, CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "?";
  return std::string(call) + " failed: " + text;
}

struct Kind {
  CUpti_ActivityKind kind;
  const char* name;
};
// The device work a call can cause through the runtime. CONCURRENT_KERNEL (not KERNEL,
// which serializes every kernel) also brings the kernels launched from the device.
constexpr Kind kKinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL"},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"},
    {CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2"},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"},
};

}  // namespace

ActivityClock::ActivityClock() {
  if (events_forced()) {
    status_ = "CUDA events: CML_CLOCK=events asked for them";
    return;
  }
  CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    status_ = "CUDA events: CUPTI unavailable (" +
              cupti_error("cuptiActivityRegisterCallbacks", r) +
              "; another profiler may hold the subscription)";
    return;
  }
  std::string kinds;
  for (std::size_t k = 0; k < sizeof kKinds / sizeof kKinds[0]; ++k) {
    r = cuptiActivityEnable(kKinds[k].kind);
    if (r != CUPTI_SUCCESS) {
      for (std::size_t j = 0; j < k; ++j) cuptiActivityDisable(kKinds[j].kind);
      status_ = "CUDA events: CUPTI unavailable (" + cupti_error("cuptiActivityEnable", r) +
                " for " + kKinds[k].name + "; another profiler may hold the subscription)";
      return;
    }
    kinds += (k ? ", " : "") + std::string(kKinds[k].name);
  }
  // A probe: a memset must come back as a record, or the clock would time every call as 0.
  available_ = true;
  {
    DeviceBuffer<unsigned char> probe(4096);
    begin();
    CUDA_CHECK(cudaMemsetAsync(probe.data(), 0x5A, probe.bytes(), 0));
    const ActivitySpan span = end();
    if (span.records == 0) {
      available_ = false;
      for (const Kind& k : kKinds) cuptiActivityDisable(k.kind);
      status_ = "CUDA events: CUPTI delivered no activity record for a probe memset";
      return;
    }
  }
  status_ = "CUPTI activity records (" + kinds +
            "): earliest start to latest end of the "
            "device work each call caused, on every stream";
}

void ActivityClock::begin() {
  CUDA_CHECK(cudaDeviceSynchronize());
  if (!available_) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  Collected& c = collected();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.reset();
}

ActivitySpan ActivityClock::end() {
  CUDA_CHECK(cudaDeviceSynchronize());
  ActivitySpan span;
  if (!available_) return span;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  Collected& c = collected();
  const std::lock_guard<std::mutex> lock(c.mutex);
  span.records = c.records;
  span.untimed = c.untimed;
  span.dropped = c.dropped;
  if (c.records > 0 && c.last > c.first) span.ms = static_cast<double>(c.last - c.first) * 1e-6;
  return span;
}

#else  // no CUPTI: the events-only build

ActivityClock::ActivityClock() {
  status_ = events_forced()
                ? "CUDA events: CML_CLOCK=events asked for them"
                : "CUDA events: built without CUPTI (CMake found no libcupti in the toolkit)";
}

void ActivityClock::begin() { CUDA_CHECK(cudaDeviceSynchronize()); }

ActivitySpan ActivityClock::end() {
  CUDA_CHECK(cudaDeviceSynchronize());
  return {};
}

#endif

ActivityClock& ActivityClock::instance() {
  static ActivityClock clock;
  return clock;
}

}  // namespace cml
