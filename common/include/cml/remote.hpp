/// \file
/// Calls into a lab's interface carried out by another process.
///
/// When the grader runs a lab's tests, the Catch2 tests, their assertions, expected values and
/// hidden data live in a *checker* process that never loads the student's object. Each call
/// the tests make into the lab's interface (`lab04::matmul_tiled(d_a, d_b, d_c, n)`) goes to a
/// proxy of the same name in the checker, which sends it over a socket to the *runner*: a
/// process that holds only the student's object, the frozen interface and the dispatch loop of
/// common/src/runner_main.cpp. The runner makes the call, waits for the GPU, and answers with
/// the result, the exception it threw, or the CUDA error it left. The checker judges; the
/// report is the checker's. Nothing the runner does can write the report, read an expected
/// value or learn the run's seed.
///
/// What crosses:
///   - values of trivially copyable types (ints, dim3, enums, plain structs) as their bytes;
///   - std::vector<T> and std::string with their elements; a struct holding a vector names its
///     fields with a `remote_fields(T&)` function found by argument-dependent lookup, which
///     returns `std::tie(...)` of them;
///   - a pointer to device memory as its allocation's shareable handle (a file descriptor
///     passed over the socket; the checker's cudaMalloc makes every allocation exportable
///     through CUDA's virtual memory management API) and an offset: the buffer stays the
///     checker's, mapped into the runner for the call (the call works on an exact-size copy,
///     copied back after: class Mappings) and unmapped after;
///   - `const void*` as a kernel's identity in the runner's address space, marked so the
///     checker can tell it from its own (cml/kernel_query.hpp asks the runner about it);
///   - the kernels the call launched, so cml::launch_count() and LaunchLog in the checker see
///     them, and whether the checker's thread held a DryLaunches.
///
/// The grader's bench of a student runs the same way: labNN_bench_checker is the lab's bench
/// (its inputs, seed, nonce, baseline, clock, verification and document) with these proxies in
/// place of the student's object. Its timed calls are made while a CallLog lives: the runner
/// maps the buffers, says it is ready, and waits for the checker's go; the checker observes
/// the call from the go to the answer, which the runner sends once the call's work is done and
/// the buffers are unmapped; the runner's own activity clock times the call between the two
/// and is believed only where the checker's observation agrees (cml/timing.hpp, RemoteCheck).
///
/// A lab lists the functions its student file defines once, in tests/remote_calls.hpp:
/// \code
///   #define CML_REMOTE_CALLS(X)                                                          \
///     X(void, lab04::matmul_tiled, (const float* a, const float* b, float* c, int n),    \
///       (a, b, c, n))                                                                    \
///     X(int, lab04::choose_tile, (int threads, std::size_t shared), (threads, shared))
/// \endcode
/// common/src/remote_proxy.cpp turns the list into the checker's proxies and
/// common/src/remote_serve.cpp into the runner's dispatch table.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace cml::remote {

/// A message that does not parse: the other side is not speaking this protocol.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bit set on a kernel identity that came from the runner (user-space addresses never have it).
inline constexpr std::uint64_t kRemoteTag = std::uint64_t{1} << 63;

/// True when `kernel` names a kernel of the runner's (see the file comment).
inline bool is_remote_kernel(const void* kernel) {
  return (reinterpret_cast<std::uintptr_t>(kernel) & kRemoteTag) != 0;
}

/// An outgoing message.
class Writer {
 public:
  void bytes(const void* data, std::size_t n) {
    if (n == 0) return;
    const std::size_t at = buffer_.size();
    buffer_.resize(at + n);
    std::memcpy(buffer_.data() + at, data, n);
  }
  template <class T>
  void pod(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes(&value, sizeof(T));
  }
  void text(const std::string& s) {
    pod<std::uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  const std::vector<char>& buffer() const { return buffer_; }
  /// Attaches a descriptor (a device allocation's shareable handle), sent beside the bytes
  /// and closed once sent; returns its index in the message. The checker's work on the GPU
  /// is finished before a message with descriptors goes.
  std::uint32_t attach(int fd) {
    fds_.push_back(fd);
    return static_cast<std::uint32_t>(fds_.size() - 1);
  }
  const std::vector<int>& fds() const { return fds_; }
  std::vector<int>& fds() { return fds_; }

 private:
  std::vector<char> buffer_;
  std::vector<int> fds_;
};

/// An incoming message, read front to back.
class Reader {
 public:
  explicit Reader(std::vector<char> buffer, std::vector<int> fds = {})
      : buffer_(std::move(buffer)), fds_(std::move(fds)) {}
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  Reader(Reader&& other) noexcept
      : buffer_(std::move(other.buffer_)), fds_(std::move(other.fds_)), at_(other.at_) {
    other.fds_.clear();
  }
  ~Reader();
  /// The descriptor attached at `index`, handed over (the reader no longer closes it).
  int take_fd(std::uint32_t index);
  void bytes(void* out, std::size_t n) {
    if (n > buffer_.size() - at_) throw ProtocolError("a message ended early");
    std::memcpy(out, buffer_.data() + at_, n);
    at_ += n;
  }
  template <class T>
  T pod() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    bytes(&value, sizeof(T));
    return value;
  }
  std::string text() {
    const auto n = pod<std::uint64_t>();
    if (n > buffer_.size() - at_) throw ProtocolError("a string runs past its message");
    std::string s(buffer_.data() + at_, n);
    at_ += n;
    return s;
  }
  bool done() const { return at_ == buffer_.size(); }

 private:
  std::vector<char> buffer_;
  std::vector<int> fds_;
  std::size_t at_ = 0;
};

/// The device buffers of one call as the runner sees them. Each of the checker's allocations
/// is imported from its descriptor and mapped once; the call works on a copy of the size the
/// checker asked cudaMalloc for, allocated by the runner's own cudaMalloc, so a write one past
/// a buffer's end lands outside an allocation, as it would in the checker (a mapping is
/// rounded up to the allocation granularity, 2 MiB, where compute-sanitizer would see it as
/// in bounds). keep() copies the results back; the destructor frees and unmaps everything.
/// A `direct` call (a timed one: the bench's) works on the mapping itself, so what the
/// exchange costs beside the call stays small and steady.
class Mappings {
 public:
  explicit Mappings(bool direct = false) : direct_(direct) {}
  Mappings(const Mappings&) = delete;
  Mappings& operator=(const Mappings&) = delete;
  ~Mappings();
  /// The runner's address of byte `offset` of the checker's allocation at `origin`: `bytes`
  /// long as mapped, `size` as asked for, shared through the descriptor `fd` (taken over).
  void* open(std::uint64_t origin, int fd, std::uint64_t bytes, std::uint64_t size,
             std::uint64_t offset);
  /// Copies every buffer back into the checker's allocation (after the call's work is done).
  void keep();
  /// True when the call was given a device buffer.
  bool any() const { return !open_.empty(); }

 private:
  struct Mapped {
    std::uint64_t origin;
    std::uint64_t handle;
    std::uint64_t address;
    std::uint64_t bytes;
    void* copy;
    std::uint64_t size;
  };
  std::vector<Mapped> open_;
  bool direct_ = false;
};

/// Writes a device pointer of the checker's (nullptr too) as its allocation's descriptor, size
/// and offset. Throws std::invalid_argument for memory the checker's cudaMalloc did not give.
void put_device_pointer(Writer& w, const void* pointer);
/// The runner's address for what put_device_pointer() wrote.
void* get_device_pointer(Reader& r, Mappings& maps);

template <class T, class = void>
struct has_fields : std::false_type {};
template <class T>
struct has_fields<T, std::void_t<decltype(remote_fields(std::declval<T&>()))>> : std::true_type {};

template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};

/// Encodes and decodes one value; `maps` is the runner's for the call (nullptr in the checker).
template <class T>
void put(Writer& w, const T& value);
template <class T>
T get(Reader& r, Mappings* maps);

template <class T>
void put(Writer& w, const T& value) {
  if constexpr (std::is_same_v<T, const void*>) {
    w.pod<std::uint64_t>(reinterpret_cast<std::uintptr_t>(value) ^ kRemoteTag);
  } else if constexpr (std::is_pointer_v<T>) {
    put_device_pointer(w, value);
  } else if constexpr (std::is_same_v<T, std::string>) {
    w.text(value);
  } else if constexpr (is_vector<T>::value) {
    w.pod<std::uint64_t>(value.size());
    for (const auto& item : value) put(w, item);
  } else if constexpr (has_fields<T>::value) {
    std::apply([&](auto&... field) { (put(w, field), ...); }, remote_fields(const_cast<T&>(value)));
  } else {
    static_assert(std::is_trivially_copyable_v<T>,
                  "this type cannot cross to the runner: give it remote_fields()");
    w.pod(value);
  }
}

template <class T>
T get(Reader& r, Mappings* maps) {
  if constexpr (std::is_same_v<T, const void*>) {
    // put() marked it: the runner's kernel arrives tagged, the checker's tag comes off.
    return reinterpret_cast<const void*>(r.pod<std::uint64_t>());
  } else if constexpr (std::is_pointer_v<T>) {
    if (maps == nullptr) throw ProtocolError("the runner answered with a pointer");
    return static_cast<T>(get_device_pointer(r, *maps));
  } else if constexpr (std::is_same_v<T, std::string>) {
    return r.text();
  } else if constexpr (is_vector<T>::value) {
    const auto n = r.pod<std::uint64_t>();
    T out;
    for (std::uint64_t i = 0; i < n; ++i) out.push_back(get<typename T::value_type>(r, maps));
    return out;
  } else if constexpr (has_fields<T>::value) {
    T value{};
    std::apply(
        [&](auto&... field) { ((field = get<std::decay_t<decltype(field)>>(r, maps)), ...); },
        remote_fields(value));
    return value;
  } else {
    return r.pod<T>();
  }
}

// ---- The checker's side ------------------------------------------------------------------

/// Sends one call and waits for its answer; returns the reader at the result (the launches,
/// exceptions and CUDA errors of the answer already dealt with: an exception the runner threw
/// is thrown here again, as the same standard type with the same message).
Reader exchange(const char* name, Writer& arguments);

/// One call made while a CallLog lived: the checker's own observation of it, and what the
/// runner said about it.
struct CallTiming {
  /// The checker's clock (steady_clock): the request sent to the answer read, the GPU work
  /// the call queued finished in between (the runner waits for it before it answers).
  double observed_ms = 0;
  bool runner_timed = false;  ///< the runner timed the call with its activity clock
  double runner_ms = 0;       ///< the runner's activity span of the call
  std::uint64_t records = 0, untimed = 0, dropped = 0;  ///< of that span
  double runner_host_ms = 0;                            ///< the runner's host time around the call
  /// The runner's span can be believed alone: its activity clock ran and lost no record.
  bool runner_complete() const { return runner_timed && untimed == 0 && dropped == 0; }
};

/// While one lives, every call this thread makes to the runner is timed and recorded: by the
/// checker's clock around the exchange and by the runner's activity clock around the call
/// itself (the timing harness, cml/timing.hpp). An `empty` log makes each call empty: the
/// runner decodes the arguments, maps the buffers and runs its clock, but calls nothing and
/// answers no result (a proxy returns a value-initialised result): what the exchange costs
/// without the call, for calibration.
class CallLog {
 public:
  explicit CallLog(bool empty = false);
  ~CallLog();
  CallLog(const CallLog&) = delete;
  CallLog& operator=(const CallLog&) = delete;
  bool empty() const { return empty_; }
  const std::vector<CallTiming>& calls() const { return calls_; }
  /// exchange()'s record of one call.
  void add(const CallTiming& call) { calls_.push_back(call); }
  /// The innermost log alive on this thread, or nullptr.
  static CallLog* current();

 private:
  bool empty_;
  std::vector<CallTiming> calls_;
  CallLog* outer_;
};

/// The checker's proxy for a function of type R(P...): `Call<decltype(&f)>{"f"}(args...)`.
template <class F>
struct Call;
template <class R, class... P>
struct Call<R (*)(P...)> {
  const char* name;
  R operator()(P... args) const {
    Writer w;
    (put<std::decay_t<P>>(w, args), ...);
    Reader r = exchange(name, w);
    if constexpr (!std::is_void_v<R>) {
      if constexpr (std::is_default_constructible_v<R>) {
        if (r.done() && CallLog::current() != nullptr && CallLog::current()->empty()) return R{};
      }
      return get<R>(r, nullptr);
    }
  }
};

// ---- The runner's side -------------------------------------------------------------------

/// One entry of the runner's dispatch table.
struct Entry {
  const char* name;
  /// Decodes the arguments, makes the call, encodes the result.
  void (*serve)(Reader& in, Writer& out, Mappings& maps);
};

/// The runner's clock around the call itself (common/src/runner_main.cpp sets it for a timed
/// call): started once the arguments are decoded and their buffers mapped, stopped once the
/// call returned; `empty` skips the call between them.
struct CallClock {
  bool empty = false;
  void (*start)() = nullptr;
  void (*stop)() = nullptr;
};
/// The runner's one CallClock.
CallClock& call_clock();

template <class F>
struct Serve;
template <class R, class... P>
struct Serve<R (*)(P...)> {
  template <R (*Fn)(P...)>
  static void serve(Reader& in, Writer& out, Mappings& maps) {
    // Braces evaluate the arguments left to right, in the order put() wrote them.
    std::tuple<std::decay_t<P>...> args{get<std::decay_t<P>>(in, &maps)...};
    if (!in.done()) throw ProtocolError("a call carried more than its arguments");
    const CallClock& clock = call_clock();
    if (clock.start != nullptr) clock.start();
    if (clock.empty) {
      if (clock.stop != nullptr) clock.stop();
    } else if constexpr (std::is_void_v<R>) {
      std::apply(Fn, args);
      if (clock.stop != nullptr) clock.stop();
    } else {
      auto result = std::apply(Fn, args);
      if (clock.stop != nullptr) clock.stop();
      put<std::decay_t<R>>(out, result);
    }
  }
};

/// The lab's dispatch table (common/src/remote_serve.cpp, from the lab's list).
const std::vector<Entry>& lab_entries();

}  // namespace cml::remote
