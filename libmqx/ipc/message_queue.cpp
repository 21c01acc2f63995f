#include "ipc/message_queue.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/log.hpp"
#include "ipc/shared_segment.hpp"

namespace mqx::ipc {

namespace {

// Why the queue open at `queue` must not be used (another user's, or open to
// others), or empty.
std::string queueProblem(mqd_t queue, const std::string& name) {
  struct stat status {};
  if (fstat(queue, &status) != 0) return fmt::format("the queue {}: fstat: {}", name, std::strerror(errno));
  return foreignObjectProblem(status, "the queue " + name);
}

// What mq_open's failure to create `name` means, in one line.
std::string createFailure(const std::string& name, int error) {
  if (error == EMFILE || error == ENOSPC || error == ENFILE || error == ENOMEM)
    return fmt::format("cannot create the queue {}: {} (the system's or this user's POSIX queues are used up: "
                       "/proc/sys/fs/mqueue/queues_max, RLIMIT_MSGQUEUE; queues of dead processes are removed by mqxd)",
                       name, std::strerror(error));
  return fmt::format("mq_open({}): {}", name, std::strerror(error));
}

} // namespace

std::unique_ptr<MessageQueue> MessageQueue::create(const std::string& name, long capacity) {
  // A stale queue of a dead process with our name goes; one of another user
  // (or open to others) is refused, never removed.
  if (const mqd_t existing = mq_open(name.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      existing != static_cast<mqd_t>(-1)) {
    const std::string problem = queueProblem(existing, name);
    mq_close(existing);
    if (!problem.empty()) throw std::runtime_error(problem);
    mq_unlink(name.c_str());
  } else if (errno == EACCES) {
    throw std::runtime_error(fmt::format("the queue {} exists and is not this user's: not using it", name));
  }
  mq_attr attributes{};
  attributes.mq_maxmsg = capacity;
  attributes.mq_msgsize = sizeof(Message);
  // Created 0600 whatever the umask: mq_open applies it, so fchmod after.
  mqd_t queue = mq_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600, &attributes);
  if (queue == static_cast<mqd_t>(-1) && errno == EINVAL) { // above /proc/sys/fs/mqueue/msg_max
    attributes.mq_maxmsg = 10;
    queue = mq_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600, &attributes);
  }
  if (queue == static_cast<mqd_t>(-1)) throw std::runtime_error(createFailure(name, errno));
  fchmod(queue, 0600);
  return std::unique_ptr<MessageQueue>(new MessageQueue(queue, name, true));
}

std::unique_ptr<MessageQueue> MessageQueue::openForSending(const std::string& name) {
  mqd_t queue = mq_open(name.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (queue == static_cast<mqd_t>(-1)) return nullptr;
  // A queue someone else made at a name of ours never gets our messages.
  if (const std::string problem = queueProblem(queue, name); !problem.empty()) {
    mq_close(queue);
    static LogRateLimit refusals;
    if (const auto notLogged = refusals.admit())
      log(LogLevel::Warn, "{}{}", problem,
          *notLogged != 0 ? fmt::format(" ({} more refused since the last line)", *notLogged) : std::string());
    return nullptr;
  }
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

bool removeQueue(const std::string& name) {
  const mqd_t queue = mq_open(name.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (queue == static_cast<mqd_t>(-1)) return false;
  const bool ours = queueProblem(queue, name).empty();
  mq_close(queue);
  return ours && mq_unlink(name.c_str()) == 0;
}

bool sendTo(const std::string& name, const Message& message) {
  auto queue = MessageQueue::openForSending(name);
  return queue != nullptr && queue->send(message);
}

} // namespace mqx::ipc
