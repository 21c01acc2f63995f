// MessageQueue: RAII over a POSIX message queue carrying ipc::Message. The
// creator (O_EXCL, mode 0600, a stale queue of ours of the same name is
// unlinked first) unlinks the name on destruction; an opener only closes.
// A queue of another user, or one others may write, is never used: create
// refuses it, openForSending does not open it (one rate-limited line). Sends
// never block (a full or vanished peer is the peer's problem, reported as
// false); receives wait at most the given time.
#pragma once

#include <mqueue.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "ipc/log_rate_limit.hpp"
#include "ipc/messages.hpp"

namespace mqx::ipc {

class MessageQueue {
public:
  // Throws std::runtime_error in one line when the name is taken by an
  // object not ours, or the system's queues are used up (EMFILE, ENOSPC).
  static std::unique_ptr<MessageQueue> create(const std::string& name, long capacity = 32);
  // Null when the queue does not exist or is not this user's own.
  static std::unique_ptr<MessageQueue> openForSending(const std::string& name);

  ~MessageQueue();
  MessageQueue(const MessageQueue&) = delete;
  MessageQueue& operator=(const MessageQueue&) = delete;

  bool send(const Message& message);
  // False on timeout. Invalid messages are skipped and logged, at most one
  // line a second with the count of those not logged (docs/hardening.md).
  bool receive(Message* message, std::chrono::milliseconds timeout);

  const std::string& name() const { return name_; }
  // Removes the name (once; the owner only): nobody can open the queue any
  // more, while descriptors already open keep working. For processes whose
  // queue objects live until exit and are never destroyed (libmqx.so).
  void removeName();

private:
  MessageQueue(mqd_t queue, std::string name, bool owner) : queue_(queue), name_(std::move(name)), owner_(owner) {}

  mqd_t queue_;
  std::string name_;
  std::atomic<bool> owner_;
  LogRateLimit invalidMessages_;
};

// Removes the queue `name` if it is this user's own (an object of another
// user at one of our names is never removed, also by root); whether it did.
bool removeQueue(const std::string& name);

// Opens `name` and sends one message; false if the queue is gone or full.
bool sendTo(const std::string& name, const Message& message);

} // namespace mqx::ipc
