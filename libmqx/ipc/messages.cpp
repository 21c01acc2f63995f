#include "ipc/messages.hpp"

#include <cstring>

namespace mqx::ipc {

Message Message::of(MessageKind kind, pid_t pid, std::uint32_t slot) {
  Message message;
  message.kind = kind;
  message.pid = pid;
  message.slot = slot;
  return message;
}

void Message::setName(const std::string& text) {
  std::memset(name, 0, sizeof name);
  std::memcpy(name, text.data(), std::min(text.size(), sizeof name - 1));
}

bool validMessage(const Message& message, std::size_t received, std::string* why) {
  auto reject = [&](const char* reason) {
    if (why != nullptr) *why = reason;
    return false;
  };
  if (received != sizeof(Message)) return reject("wrong size");
  if (message.magic != kMessageMagic) return reject("bad magic");
  if (message.version != kMessageVersion) return reject("unknown version");
  switch (message.kind) {
  case MessageKind::AdmissionRequest:
  case MessageKind::DemandUpdate:
  case MessageKind::FootprintUpdate:
  case MessageKind::QueryFinished:
  case MessageKind::Wake:
  case MessageKind::Admitted:
  case MessageKind::EvictRequest:
  case MessageKind::EvictAck:
  case MessageKind::LaunchTuningRequest:
  case MessageKind::LaunchFinished:
  case MessageKind::LaunchParameters: break;
  default: return reject("unknown kind");
  }
  if (message.kind != MessageKind::Wake && message.pid <= 0) return reject("bad pid");
  if (message.slot != kNoSlot && message.slot >= kMaxClients) return reject("slot out of range");
  if (std::memchr(message.name, 0, sizeof message.name) == nullptr) return reject("name not terminated");
  return true;
}

} // namespace mqx::ipc
