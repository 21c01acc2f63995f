// The wire between HostBlockLender and HostBlockBorrower
// (host_block_lending.hpp): internal to host_block_lender.cpp and
// host_block_borrower.cpp. mqxd and a client of another version may meet:
// every request starts with kMagic, and the lender closes on any other.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "ipc/unix_socket.hpp"

namespace mqx::ipc::detail {

constexpr std::array<char, 8> kMagic{'m', 'q', 'x', 'l', 'e', 'n', 'd', '1'};
// Blocks, and so descriptors, per message: far under SCM_RIGHTS's limit
// (253), and a usual borrow still fits in one or two messages.
constexpr std::size_t kBlocksPerMessage = 16;
static_assert(kBlocksPerMessage <= kMaxDescriptorsPerMessage);

// Over SOCK_SEQPACKET (each message arrives whole). A borrower sends
// Requests. A Borrow is answered by one or more Answers, the blocks
// kBlocksPerMessage at a time with their descriptors attached; a Return by
// nothing. Answers carry their borrow's sequence number, so that a borrower
// that stopped waiting recognises a late answer and gives its blocks back
// instead of taking them for the answer to a later borrow.
enum class RequestKind : std::uint32_t { Borrow = 1, Return = 2 };
struct Request {
  std::array<char, 8> magic = kMagic;
  RequestKind kind = RequestKind::Borrow;
  std::uint32_t count = 0;                            // Borrow: blocks wanted; Return: ids below
  std::uint64_t sequence = 0;                         // Borrow
  std::uint64_t blockBytes = 0;                       // Borrow
  std::array<std::uint64_t, kBlocksPerMessage> ids{}; // Return
};
enum class AnswerStatus : std::uint32_t { Ok = 0, Empty = 1, WrongSize = 2 };
struct BlockEntry {
  std::uint64_t id = 0;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};
struct Answer {
  std::uint64_t sequence = 0;
  AnswerStatus status = AnswerStatus::Empty;
  std::uint32_t total = 0; // blocks in the whole answer
  std::uint32_t count = 0; // in this message, one descriptor each
  std::uint32_t reserved = 0;
  std::uint64_t blockBytes = 0; // the pool's
  std::array<BlockEntry, kBlocksPerMessage> blocks{};
};

} // namespace mqx::ipc::detail
