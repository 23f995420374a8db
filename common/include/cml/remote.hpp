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
class Mappings {
 public:
  Mappings() = default;
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
    if constexpr (!std::is_void_v<R>) return get<R>(r, nullptr);
  }
};

// ---- The runner's side -------------------------------------------------------------------

/// One entry of the runner's dispatch table.
struct Entry {
  const char* name;
  /// Decodes the arguments, makes the call, encodes the result.
  void (*serve)(Reader& in, Writer& out, Mappings& maps);
};

template <class F>
struct Serve;
template <class R, class... P>
struct Serve<R (*)(P...)> {
  template <R (*Fn)(P...)>
  static void serve(Reader& in, Writer& out, Mappings& maps) {
    // Braces evaluate the arguments left to right, in the order put() wrote them.
    std::tuple<std::decay_t<P>...> args{get<std::decay_t<P>>(in, &maps)...};
    if (!in.done()) throw ProtocolError("a call carried more than its arguments");
    if constexpr (std::is_void_v<R>) {
      std::apply(Fn, args);
    } else {
      put<std::decay_t<R>>(out, std::apply(Fn, args));
    }
  }
};

/// The lab's dispatch table (common/src/remote_serve.cpp, from the lab's list).
const std::vector<Entry>& lab_entries();

}  // namespace cml::remote
