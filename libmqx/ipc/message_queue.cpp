#include "ipc/message_queue.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/log.hpp"

namespace mqx::ipc {

std::unique_ptr<MessageQueue> MessageQueue::create(const std::string& name, long capacity) {
  mq_unlink(name.c_str()); // a stale queue of a dead process with our name
  mq_attr attributes{};
  attributes.mq_maxmsg = capacity;
  attributes.mq_msgsize = sizeof(Message);
  // Created 0600 whatever the umask: mq_open applies it, so fchmod after.
  mqd_t queue = mq_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600, &attributes);
  if (queue == static_cast<mqd_t>(-1) && errno == EINVAL) { // above /proc/sys/fs/mqueue/msg_max
    attributes.mq_maxmsg = 10;
    queue = mq_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600, &attributes);
  }
  if (queue == static_cast<mqd_t>(-1)) throw std::runtime_error("mq_open(" + name + "): " + std::strerror(errno));
  fchmod(queue, 0600);
  return std::unique_ptr<MessageQueue>(new MessageQueue(queue, name, true));
}

std::unique_ptr<MessageQueue> MessageQueue::openForSending(const std::string& name) {
  mqd_t queue = mq_open(name.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (queue == static_cast<mqd_t>(-1)) return nullptr;
  return std::unique_ptr<MessageQueue>(new MessageQueue(queue, name, false));
}

MessageQueue::~MessageQueue() {
  mq_close(queue_);
  removeName();
}

void MessageQueue::removeName() {
  if (owner_.exchange(false)) mq_unlink(name_.c_str());
}

bool MessageQueue::send(const Message& message) {
  mq_attr attributes{};
  mq_getattr(queue_, &attributes);
  if (!(attributes.mq_flags & O_NONBLOCK)) {
    attributes.mq_flags |= O_NONBLOCK;
    mq_setattr(queue_, &attributes, nullptr);
  }
  return mq_send(queue_, reinterpret_cast<const char*>(&message), sizeof message, 0) == 0;
}

bool MessageQueue::receive(Message* message, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::system_clock::now() + timeout;
  // The buffer must hold the queue's largest message, which another process
  // may have made larger than ours if it created the queue.
  mq_attr attributes{};
  if (mq_getattr(queue_, &attributes) != 0) return false;
  if (attributes.mq_flags & O_NONBLOCK) {
    attributes.mq_flags &= ~O_NONBLOCK;
    mq_setattr(queue_, &attributes, nullptr);
  }
  std::string buffer(static_cast<std::size_t>(std::max<long>(attributes.mq_msgsize, sizeof(Message))), '\0');
  for (;;) {
    const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count();
    timespec until{static_cast<time_t>(nanos / 1'000'000'000), static_cast<long>(nanos % 1'000'000'000)};
    const ssize_t received = mq_timedreceive(queue_, buffer.data(), buffer.size(), nullptr, &until);
    if (received < 0) {
      if (errno == EINTR) continue;
      return false; // ETIMEDOUT, or the queue is unusable
    }
    std::string why;
    std::memcpy(message, buffer.data(), std::min(buffer.size(), sizeof(Message)));
    if (validMessage(*message, static_cast<std::size_t>(received), &why)) return true;
    if (const auto notLogged = invalidMessages_.admit())
      log(LogLevel::Warn, "dropping an invalid message on {} ({}){}", name_, why,
          *notLogged != 0 ? fmt::format("; {} more dropped since the last line, not logged", *notLogged)
                          : std::string());
  }
}

bool sendTo(const std::string& name, const Message& message) {
  auto queue = MessageQueue::openForSending(name);
  return queue != nullptr && queue->send(message);
}

} // namespace mqx::ipc
