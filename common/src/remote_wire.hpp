// What the checker and the runner say to each other (cml/remote.hpp), beside the values:
// a request is [name][dry flag][arguments]; an answer is [status][launches][kernels logged]
// [the runner ends after this answer][result | exception]. Each message is framed by its
// 32-bit length on a stream socket.
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

/// Writes the exception `error` so the checker throws it again as the same standard type
/// (cml::CudaError with its code; any other as std::runtime_error with its message).
void put_exception(Writer& w, std::exception_ptr error);

}  // namespace cml::remote
