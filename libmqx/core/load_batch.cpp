#include "core/load_batch.hpp"

#include "trace/trace_span.hpp"
#include "trace/trace_tracks.hpp"

namespace mqx {
namespace {

const char* loadName(HostImageKind kind) {
  switch (kind) {
  case HostImageKind::Zero: return "load (zero fill)";
  case HostImageKind::Fill: return "load (memset fill)";
  case HostImageKind::CowSource: return "load H2D (application buffer)";
  case HostImageKind::Swap: return "load H2D (swap buffer)";
  default: return "load";
  }
}

} // namespace

// A page whose source has saved edges loads in up to three parts: the edges
// from where they were saved, the rest from the application's buffer (which
// still merges with the neighbouring pages' loads).
void LoadBatch::add(DevicePtr address, const HostImage& image, std::size_t bytes) {
  if (image.kind != HostImageKind::CowSource || !image.edges) return addMerged({address, image, bytes});
  const SourceEdges& edges = *image.edges;
  if (edges.headBytes != 0) addMerged({address, HostImage::inBuffer(edges.head()), edges.headBytes});
  addMerged({address + edges.headBytes, HostImage::inBuffer(image.protectedStart()), image.protectedBytes(bytes)});
  if (edges.tailBytes != 0) addMerged({address + edges.tailStart, HostImage::inBuffer(edges.tail()), edges.tailBytes});
}

void LoadBatch::addMerged(const Load& load) {
  if (!loads_.empty()) {
    Load& last = loads_.back();
    const bool adjacent = last.address + last.bytes == load.address && last.image.kind == load.image.kind;
    const HostImage& a = last.image;
    const HostImage& b = load.image;
    bool merge = false;
    if (adjacent && a.kind == HostImageKind::CowSource) merge = a.source + last.bytes == b.source;
    if (adjacent && a.kind == HostImageKind::Zero) merge = true;
    if (adjacent && a.kind == HostImageKind::Fill)
      merge = a.pattern == b.pattern && a.elementSize == b.elementSize && last.bytes % a.elementSize == 0;
    if (merge) {
      last.bytes += load.bytes;
      return;
    }
  }
  loads_.push_back(load);
}

Status LoadBatch::issue(device::DeviceBackend& backend, bool pinnedSwap, Statistics& statistics,
                        trace::TraceRecorder* trace, LoadSources& sources) const {
  for (const Load& load : loads_)
    MQX_TRY(issueOne(load, backend, pinnedSwap, statistics, trace, sources));
  return Status::Success;
}

Status LoadBatch::issueOne(const Load& load, device::DeviceBackend& backend, bool pinnedSwap, Statistics& statistics,
                           trace::TraceRecorder* trace, LoadSources& sources) {
  const StreamHandle stream = backend.transferStream(device::TransferDirection::ToDevice);
  // The span is the load's issue on the H2D track: the copy itself is
  // asynchronous on the GPU (on sim it runs inside the call).
  trace::TraceSpan span(trace, loadName(load.image.kind), "transfer", trace::kToDeviceTrack);
  span.argument("bytes", load.bytes);
  switch (load.image.kind) {
  case HostImageKind::None: return Status::Unknown;
  case HostImageKind::Zero:
    statistics.bytesFilledOnDevice += load.bytes;
    return backend.fill(load.address, 0, 1, load.bytes, stream);
  case HostImageKind::Fill:
    statistics.bytesFilledOnDevice += load.bytes;
    return backend.fill(load.address, load.image.pattern, load.image.elementSize, load.bytes / load.image.elementSize,
                        stream);
  case HostImageKind::CowSource:
    sources.applicationBuffers = true;
    statistics.bytesToDevice += load.bytes;
    return backend.copyToDevice(load.address, load.image.source, load.bytes, stream, false);
  case HostImageKind::Swap:
    sources.swapSlots = true;
    statistics.bytesToDevice += load.bytes;
    return backend.copyToDevice(load.address, load.image.slot, load.bytes, stream, pinnedSwap);
  }
  return Status::Unknown;
}

} // namespace mqx
