// The runner: the process that holds the student's object when the grader runs a lab's tests
// or its bench (cml/remote.hpp). It reads one call at a time from the socket the checker holds
// the other end of, makes it, waits for the GPU, and answers; it ends when the checker closes
// the socket. It decides nothing: the checker judges every answer.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cml/activity_clock.hpp"
#include "cml/check.hpp"
#include "cml/kernel_query.hpp"
#include "cml/launch_count.hpp"
#include "cml/remote.hpp"
#include "remote_wire.hpp"

namespace {

using cml::remote::Entry;
using cml::remote::Mappings;
using cml::remote::Reader;
using cml::remote::Serve;
using cml::remote::Writer;

// Exit status after a call left the GPU context unusable (an illegal address): the checker
// re-runs the cases after it with a new runner.
constexpr int kContextLostExit = 70;

// The calls every runner answers beside the lab's (cml/kernel_query.hpp).
const std::vector<Entry>& builtin_entries() {
  static const std::vector<Entry> entries = {
      {"cml.func_attributes",
       &Serve<decltype(&cml::func_attributes)>::serve<&cml::func_attributes>},
      {"cml.max_active_blocks",
       &Serve<decltype(&cml::max_active_blocks)>::serve<&cml::max_active_blocks>},
  };
  return entries;
}

const Entry* find(const std::string& name) {
  for (const auto* table : {&cml::remote::lab_entries(), &builtin_entries()}) {
    for (const Entry& e : *table) {
      if (name == e.name) return &e;
    }
  }
  return nullptr;
}

struct Outcome {
  bool threw = false;
  Writer result;
  Writer error;
  bool context_lost = false;
};

// The runner's clock for a timed call (the checker's CallLog): the activity clock's span of
// the call itself, from after its arguments are mapped to after its work is done, and the
// host time around the same. The checker believes it only where it agrees with its own
// observation of the exchange (cml/timing.hpp).
cml::remote::WireTiming g_timing;
std::chrono::steady_clock::time_point g_started;
int g_socket = -1;

// A few bytes of the runner's own, for the work that is not the call's.
void* scratch() {
  static void* p = [] {
    void* q = nullptr;
    CUDA_CHECK(cudaMalloc(&q, 4));
    return q;
  }();
  return p;
}

// Once the call's buffers are mapped: the first work after a mapping (which waits for the new
// mapping to be usable) is done here, then the runner says it is ready and waits for the
// checker's go, which starts the checker's observation of the call.
void start_clock() {
  cml::ActivityClock& clock = cml::ActivityClock::instance();
  CUDA_CHECK(cudaMemsetAsync(scratch(), 0, 4, 0));
  CUDA_CHECK(cudaDeviceSynchronize());
  Writer ready;
  ready.pod(cml::remote::kReadyMark);
  std::vector<char> go;
  std::vector<int> fds;
  if (!cml::remote::send_frame(g_socket, ready) ||
      cml::remote::receive_frame(g_socket, go, fds) != cml::remote::FrameStatus::kOk ||
      go.size() != 1 || static_cast<std::uint8_t>(go[0]) != cml::remote::kGoMark) {
    std::_Exit(0);  // the checker is gone or out of turn: nothing to answer
  }
  clock.begin();
  g_started = std::chrono::steady_clock::now();
}

void stop_clock() {
  cml::ActivityClock& clock = cml::ActivityClock::instance();
  const cml::ActivitySpan span = clock.end();
  const auto now = std::chrono::steady_clock::now();
  g_timing.timed = 1;
  g_timing.clock = clock.available() ? 1 : 0;
  g_timing.span_ms = span.ms;
  g_timing.records = span.records;
  g_timing.untimed = span.untimed;
  g_timing.dropped = span.dropped;
  g_timing.host_ms = std::chrono::duration<double, std::milli>(now - g_started).count();
}

// An empty call's clock stops after one small memset of the runner's own, so its records are
// flushed and collected as a real call's are: the checker's calibration then holds all the
// clock's own cost.
void stop_clock_empty() {
  CUDA_CHECK(cudaMemsetAsync(scratch(), 0, 4, 0));
  stop_clock();
}

// Makes one call; waits for the work it queued when it touched the GPU. A timed call (the
// bench's) works on the checker's buffers directly, and they are unmapped before it answers.
Outcome serve(const Entry& entry, Reader& in, std::uint8_t flags) {
  Outcome out;
  const bool timed = (flags & cml::remote::kTimedFlag) != 0;
  const bool empty = (flags & cml::remote::kEmptyFlag) != 0;
  Mappings maps(/*direct=*/timed);
  const bool dry = (flags & cml::remote::kDryFlag) != 0;
  cml::remote::CallClock& clock = cml::remote::call_clock();
  clock = {empty, timed ? &start_clock : nullptr,
           timed ? (empty ? &stop_clock_empty : &stop_clock) : nullptr};
  g_timing = {};
  const std::uint64_t before = cml::launch_count();
  try {
    if (dry) {
      const cml::DryLaunches no_work;
      entry.serve(in, out.result, maps);
    } else {
      entry.serve(in, out.result, maps);
    }
  } catch (...) {
    out.threw = true;
    cml::remote::put_exception(out.error, std::current_exception());
  }
  if (cml::launch_count() != before || maps.any()) {
    const cudaError_t first = cudaDeviceSynchronize();
    if (first != cudaSuccess) {
      cudaGetLastError();
      // A sticky error (the context is gone) comes back from every later call.
      out.context_lost = cudaDeviceSynchronize() != cudaSuccess;
      if (!out.threw) {
        out.threw = true;
        cml::remote::put_exception(
            out.error,
            std::make_exception_ptr(
                cml::CudaError(first, std::string("CUDA error ") + cudaGetErrorName(first) + " (" +
                                          cudaGetErrorString(first) +
                                          ") after the call returned: the work it queued on the "
                                          "GPU failed")));
      }
    }
  }
  if (maps.any() && !out.context_lost) {
    // What the call wrote, whatever it then returned or threw, as in the checker's process.
    try {
      maps.keep();
    } catch (...) {
      if (!out.threw) {
        out.threw = true;
        cml::remote::put_exception(out.error, std::current_exception());
      }
    }
  }
  return out;
}

Writer answer(const Outcome& outcome, std::uint64_t before) {
  Writer w;
  w.pod(outcome.threw ? cml::remote::AnswerStatus::kThrew : cml::remote::AnswerStatus::kReturned);
  const std::uint64_t launched = cml::launch_count() - before;
  const auto kernels = cml::launched_kernels(before);
  w.pod<std::uint64_t>(launched);
  w.pod<std::uint64_t>(kernels.size());
  for (const void* k : kernels) w.pod<std::uint64_t>(reinterpret_cast<std::uintptr_t>(k));
  w.pod<std::uint8_t>(outcome.context_lost ? 1 : 0);
  w.pod(g_timing);
  const auto& tail = outcome.threw ? outcome.error.buffer() : outcome.result.buffer();
  w.bytes(tail.data(), tail.size());
  return w;
}

}  // namespace

int main(int argc, char* argv[]) {
  int fd = -1;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--fd") == 0) fd = std::atoi(argv[i + 1]);
  }
  if (fd < 0) {
    std::fprintf(stderr,
                 "usage: %s --fd N\nThe grader's runner: it makes the calls of the lab's tests, "
                 "which a checker sends it over the socket N. Run the checker instead.\n",
                 argv[0]);
    return 2;
  }
  g_socket = fd;
  std::vector<char> message;
  std::vector<int> fds;
  while (cml::remote::receive_frame(fd, message, fds) == cml::remote::FrameStatus::kOk) {
    Reader in(std::move(message), std::move(fds));
    message = {};
    fds = {};
    const std::string name = in.text();
    const auto flags = in.pod<std::uint8_t>();
    const Entry* entry = find(name);
    if (entry == nullptr) {
      std::fprintf(stderr, "runner: no function %s in this lab\n", name.c_str());
      return 3;
    }
    const std::uint64_t before = cml::launch_count();
    const Outcome outcome = serve(*entry, in, flags);
    Writer reply = answer(outcome, before);
    if (!cml::remote::send_frame(fd, reply)) return 0;
    if (outcome.context_lost) return kContextLostExit;
  }
  return 0;
}
