// The checker's and the runner's halves of a remote call (cml/remote.hpp): framing on the
// socket (descriptors included), the answer's launches, exceptions and CUDA errors, and the
// checker's connection to its runner. Device buffers: remote_memory.cpp.
#include "cml/remote.hpp"

#include <spawn.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <tuple>
#include <utility>

#include "cml/check.hpp"
#include "cml/kernel_query.hpp"
#include "cml/launch_count.hpp"
#include "remote_wire.hpp"

extern char** environ;

namespace cml::remote {
namespace {

// ---- Framing: a 32-bit length, then the message; descriptors ride on the length -----------

bool write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t sent = ::send(fd, data, n, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    data += sent;
    n -= static_cast<std::size_t>(sent);
  }
  return true;
}

// Reads exactly n bytes; the descriptors that came with them are appended to `fds` (or closed
// when `fds` is null or full).
bool read_all(int fd, char* data, std::size_t n, std::vector<int>* fds) {
  while (n > 0) {
    iovec io{data, n};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
    msghdr msg{};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t got = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int received = -1;
        std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        if (fds != nullptr && fds->size() < kMaxFds) {
          fds->push_back(received);
        } else {
          ::close(received);
        }
      }
    }
    data += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

}  // namespace

bool send_frame(int fd, Writer& message) {
  const auto& bytes = message.buffer();
  auto& fds = message.fds();
  bool ok = bytes.size() <= kMaxFrame && fds.size() <= kMaxFds;
  if (ok) {
    auto n = static_cast<std::uint32_t>(bytes.size());
    iovec io{&n, sizeof n};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
    msghdr msg{};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    if (!fds.empty()) {
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t sent = -1;
    do {
      sent = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    ok = sent > 0 && (static_cast<std::size_t>(sent) == sizeof n ||
                      write_all(fd, reinterpret_cast<const char*>(&n) + sent,
                                sizeof n - static_cast<std::size_t>(sent)));
    ok = ok && write_all(fd, bytes.data(), bytes.size());
  }
  for (int d : fds) ::close(d);
  fds.clear();
  return ok;
}

FrameStatus receive_frame(int fd, std::vector<char>& message, std::vector<int>& fds) {
  for (int d : fds) ::close(d);
  fds.clear();
  std::uint32_t n = 0;
  if (!read_all(fd, reinterpret_cast<char*>(&n), sizeof n, &fds)) return FrameStatus::kClosed;
  if (n > kMaxFrame) return FrameStatus::kTooLarge;
  message.resize(n);
  if (!read_all(fd, message.data(), n, nullptr)) return FrameStatus::kClosed;
  return FrameStatus::kOk;
}

Reader::~Reader() {
  for (int d : fds_) {
    if (d >= 0) ::close(d);
  }
}

int Reader::take_fd(std::uint32_t index) {
  if (index >= fds_.size() || fds_[index] < 0) {
    throw ProtocolError("a device buffer came without its descriptor");
  }
  const int fd = fds_[index];
  fds_[index] = -1;
  return fd;
}

// ---- Exceptions as they cross ---------------------------------------------------------

namespace {

// The standard exceptions that cross as themselves, each before its base (the order a
// catch must try them in); an exception crosses as the index of the first it is.
using Crossing = std::tuple<std::invalid_argument, std::domain_error, std::length_error,
                            std::out_of_range, std::logic_error, std::range_error,
                            std::overflow_error, std::underflow_error, std::runtime_error>;
constexpr std::uint8_t kCudaKind = 0xFE;   // cml::CudaError, with its code
constexpr std::uint8_t kOtherKind = 0xFF;  // any other: a std::runtime_error with its text

template <std::size_t... I>
std::uint8_t kind_of(const std::exception& e, std::index_sequence<I...>) {
  std::uint8_t kind = kOtherKind;
  ((kind == kOtherKind && dynamic_cast<const std::tuple_element_t<I, Crossing>*>(&e) != nullptr
        ? kind = I
        : 0),
   ...);
  return kind;
}

template <std::size_t... I>
[[noreturn]] void throw_kind(std::uint8_t kind, const std::string& what,
                             std::index_sequence<I...>) {
  ((kind == I ? throw std::tuple_element_t<I, Crossing>(what) : void()), ...);
  throw std::runtime_error(what);
}

constexpr auto kCrossing = std::make_index_sequence<std::tuple_size_v<Crossing>>{};

}  // namespace

void put_exception(Writer& w, std::exception_ptr error) {
  std::uint8_t kind = kOtherKind;
  std::string what = "an exception that is not a std::exception";
  std::int32_t cuda_code = 0;
  try {
    std::rethrow_exception(error);
  } catch (const CudaError& e) {
    kind = kCudaKind, what = e.what(), cuda_code = e.code();
  } catch (const std::exception& e) {
    kind = kind_of(e, kCrossing), what = e.what();
  } catch (...) {
  }
  w.pod(kind);
  w.pod(cuda_code);
  w.text(what);
}

namespace {

// Thrown where the runner threw: the same standard type, the same message.
[[noreturn]] void rethrow(Reader& r) {
  const auto kind = r.pod<std::uint8_t>();
  const auto cuda_code = r.pod<std::int32_t>();
  const std::string what = r.text();
  if (kind == kCudaKind) throw CudaError(static_cast<cudaError_t>(cuda_code), what);
  throw_kind(kind, what, kCrossing);
}

// ---- The checker's connection to its runner ---------------------------------------------

// Exit status of a checker whose runner is gone before a call: the report stops there, so
// the grader re-runs the cases that did not report, each with a runner of its own.
constexpr int kRunnerGoneExit = 75;

class Connection {
 public:
  // The socket: CML_RUNNER_FD (the grader made the pair and started the runner in its jail),
  // else a runner this process starts itself: CML_RUNNER, else labNN_runner beside it.
  int socket() {
    if (fd_ >= 0) return fd_;
    if (const char* given = std::getenv("CML_RUNNER_FD")) {
      fd_ = std::atoi(given);
      return fd_;
    }
    start_runner();
    return fd_;
  }

  [[noreturn]] void gone(const std::string& why) {
    std::fprintf(stderr, "cml: %s\n", why.c_str());
    std::fflush(stderr);
    std::_Exit(kRunnerGoneExit);
  }

  bool lost = false;  // the runner ended during an earlier call

 private:
  void start_runner() {
    std::string path;
    if (const char* given = std::getenv("CML_RUNNER")) {
      path = given;
    } else {
      char self[PATH_MAX] = {};
      const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
      if (n <= 0) gone("cannot find this executable's folder to start the runner");
      // labNN_checker and labNN_hidden_checker start labNN_runner from their own folder.
      path.assign(self, static_cast<std::size_t>(n));
      const std::size_t folder = path.rfind('/') + 1;
      path = path.substr(0, path.find('_', folder)) + "_runner";
    }
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      gone("cannot make the runner's socket");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pair[1], 3);
    std::string fd_arg = "3";
    char* argv[] = {path.data(), const_cast<char*>("--fd"), fd_arg.data(), nullptr};
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(pair[1]);
    if (rc != 0) gone("cannot start the runner " + path + ": " + std::strerror(rc));
    fd_ = pair[0];
  }

  int fd_ = -1;
};

Connection& connection() {
  static Connection c;
  return c;
}

std::mutex g_call_mutex;  // one call in flight: the answer is the one to the call sent

thread_local CallLog* t_log = nullptr;

}  // namespace

CallLog::CallLog(bool empty) : empty_(empty), outer_(t_log) { t_log = this; }
CallLog::~CallLog() { t_log = outer_; }
CallLog* CallLog::current() { return t_log; }

CallClock& call_clock() {
  static CallClock clock;
  return clock;
}

Reader exchange(const char* name, Writer& arguments) {
  std::lock_guard<std::mutex> lock(g_call_mutex);
  Connection& c = connection();
  if (c.lost)
    c.gone(std::string("the process running the lab's code is gone; ") + name +
           " and the cases after it run again in a process of their own");
  CallLog* log = CallLog::current();
  Writer request;
  request.text(name);
  std::uint8_t flags = detail::dry_launches() ? kDryFlag : 0;
  if (log != nullptr) flags |= log->empty() ? kTimedFlag | kEmptyFlag : kTimedFlag;
  request.pod(flags);
  request.bytes(arguments.buffer().data(), arguments.buffer().size());
  request.fds() = std::move(arguments.fds());  // send_frame() closes them
  arguments.fds().clear();
  // Every buffer the checker filled is complete before the runner reads it.
  if (!request.fds().empty()) CUDA_CHECK(cudaDeviceSynchronize());
  const int fd = c.socket();
  std::vector<char> answer;
  std::vector<int> no_fds;
  auto sent_at = std::chrono::steady_clock::now();
  bool answered = send_frame(fd, request) && receive_frame(fd, answer, no_fds) == FrameStatus::kOk;
  if (answered && log != nullptr && answer.size() == 1 &&
      static_cast<std::uint8_t>(answer[0]) == kReadyMark) {
    // A timed call's buffers are mapped: the observation runs from the go to the answer.
    Writer go;
    go.pod(kGoMark);
    sent_at = std::chrono::steady_clock::now();
    answered = send_frame(fd, go) && receive_frame(fd, answer, no_fds) == FrameStatus::kOk;
  }
  const auto answered_at = std::chrono::steady_clock::now();
  if (!answered) {
    c.lost = true;
    throw std::runtime_error(std::string("the process running your code ended during ") + name +
                             " (it crashed, called exit or was stopped): this case fails; "
                             "the cases after it run in a new process");
  }
  Reader r(std::move(answer));
  const auto status = r.pod<AnswerStatus>();
  const auto launched = r.pod<std::uint64_t>();
  const auto logged = r.pod<std::uint64_t>();
  if (logged > launched || logged > kLaunchLogSize) throw ProtocolError("bad launch log");
  std::vector<const void*> kernels;
  for (std::uint64_t i = 0; i < logged; ++i) {
    kernels.push_back(reinterpret_cast<const void*>(r.pod<std::uint64_t>() | kRemoteTag));
  }
  detail::log_launches(launched, kernels);
  if (r.pod<std::uint8_t>() != 0) c.lost = true;  // the runner's GPU context is dead: it ends
  const auto timing = r.pod<WireTiming>();
  if (log != nullptr) {
    CallTiming call;
    call.observed_ms = std::chrono::duration<double, std::milli>(answered_at - sent_at).count();
    call.runner_timed = timing.timed != 0 && timing.clock != 0;
    call.runner_ms = timing.span_ms;
    call.records = timing.records;
    call.untimed = timing.untimed;
    call.dropped = timing.dropped;
    call.runner_host_ms = timing.host_ms;
    log->add(call);
  }
  if (status == AnswerStatus::kThrew) rethrow(r);
  if (status != AnswerStatus::kReturned) throw ProtocolError("bad answer status");
  return r;
}

}  // namespace cml::remote

namespace cml {

cudaFuncAttributes func_attributes(const void* kernel) {
  if (remote::is_remote_kernel(kernel)) {
    return remote::Call<cudaFuncAttributes (*)(const void*)>{"cml.func_attributes"}(kernel);
  }
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  return attributes;
}

int max_active_blocks(const void* kernel, int block_threads, std::size_t dynamic_bytes) {
  if (remote::is_remote_kernel(kernel)) {
    return remote::Call<int (*)(const void*, int, std::size_t)>{
        "cml.max_active_blocks"}(kernel, block_threads, dynamic_bytes);
  }
  int blocks = 0;
  CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block_threads, dynamic_bytes));
  return blocks;
}

}  // namespace cml
