// What the checker and the runner say to each other (cml/remote.hpp), beside the values:
// a request is [name][flags][arguments]; an answer is [status][launches][kernels logged]
// [the runner ends after this answer][the runner's timing][result | exception]. A timed call
// has a handshake between them: [ready] from the runner, [go] from the checker. Each message
// is framed by its 32-bit length on a stream socket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <vector>

#include "cml/remote.hpp"

namespace cml::remote {

/// Largest message either side accepts (a vector of warp requests is the largest argument).
inline constexpr std::size_t kMaxFrame = std::size_t{256} << 20;

enum class FrameStatus { kOk, kClosed, kTooLarge };

/// Sends `message`'s bytes and descriptors (closing the descriptors); false when the other
/// side is gone.
bool send_frame(int fd, Writer& message);
/// Receives one message with its descriptors.
FrameStatus receive_frame(int fd, std::vector<char>& message, std::vector<int>& fds);

/// Most descriptors one message carries.
inline constexpr std::size_t kMaxFds = 64;

enum class AnswerStatus : std::uint8_t { kReturned = 0, kThrew = 1 };

/// A request's flags.
inline constexpr std::uint8_t kDryFlag = 1;    ///< the checker's thread holds a DryLaunches
inline constexpr std::uint8_t kTimedFlag = 2;  ///< time the call with the runner's clock
inline constexpr std::uint8_t kEmptyFlag = 4;  ///< decode, map and time, but call nothing

/// A timed call's handshake: once its buffers are mapped the runner sends a frame of this one
/// byte and waits for the checker's frame of kGoMark; the checker's observation of the call
/// starts when it sends that (CallTiming::observed_ms).
inline constexpr std::uint8_t kReadyMark = 0xA5;
inline constexpr std::uint8_t kGoMark = 0x5A;

/// The runner's timing of a timed call, as it crosses.
struct WireTiming {
  std::uint8_t timed = 0;  ///< 1: the runner's clock ran around the call
  std::uint8_t clock = 0;  ///< 1: that clock was the activity clock (CUPTI)
  double span_ms = 0;
  std::uint64_t records = 0, untimed = 0, dropped = 0;
  double host_ms = 0;
};

/// Writes the exception `error` so the checker throws it again as the same standard type
/// (cml::CudaError with its code; any other as std::runtime_error with its message).
void put_exception(Writer& w, std::exception_ptr error);

}  // namespace cml::remote
