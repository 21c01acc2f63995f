// Stream capture family: passed through, and counted. Copies and launches on
// a capturing stream must pass through unchanged (mqx puts nothing of its own
// into a capture, docs/interposer.md); asking the driver whether a stream
// captures costs a call on every copy and launch, so it is asked only while
// some capture is open in the process. A capture is counted from a begin
// that succeeded until the end that closes it (successful or invalidated).
//
// The CUDA 10.0 entry point cuStreamBeginCapture (no mode argument) is not
// hooked: cuGetProcAddress gives it only to callers asking for a version
// below 10010. A capture begun through it is not counted; mqx's work then
// enters it and the driver fails the capture (an error, never wrong bytes).
#include "hook/hook_declarations.hpp"
#include "hook/hook_support.hpp"

using namespace mqx;
using namespace mqx::hook;

namespace {

CUresult countBegin(CUresult result) noexcept {
  if (result == CUDA_SUCCESS) Runtime::instance().captureBegun();
  return result;
}

bool capturingNow(CUstream stream) noexcept {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return callReal(&DriverApi::cuStreamIsCapturing, stream, &status) == CUDA_SUCCESS &&
         status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// The end closes the capture when the stream captured before and does not
// after, whatever the call returned (an invalidated capture ends with an
// error).
template <typename End> CUresult countEnd(CUstream stream, End&& end) noexcept {
  const bool before = capturingNow(stream);
  const CUresult result = end();
  if (before && !capturingNow(stream)) Runtime::instance().captureEnded();
  return result;
}

} // namespace

MQX_EXPORT CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode) {
  return countBegin(callReal(&DriverApi::cuStreamBeginCapture_v2, stream, mode));
}

MQX_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode) {
  return countBegin(callReal(&DriverApi::cuStreamBeginCapture_v2_ptsz, stream, mode));
}

MQX_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream stream, CUgraph graph, const CUgraphNode* dependencies,
                                                const CUgraphEdgeData* edges, size_t count, CUstreamCaptureMode mode) {
  return countBegin(
      callReal(&DriverApi::cuStreamBeginCaptureToGraph, stream, graph, dependencies, edges, count, mode));
}

MQX_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream stream, CUgraph graph,
                                                     const CUgraphNode* dependencies, const CUgraphEdgeData* edges,
                                                     size_t count, CUstreamCaptureMode mode) {
  return countBegin(
      callReal(&DriverApi::cuStreamBeginCaptureToGraph_ptsz, stream, graph, dependencies, edges, count, mode));
}

MQX_EXPORT CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  return countEnd(stream, [&] { return callReal(&DriverApi::cuStreamEndCapture, stream, graph); });
}

MQX_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream stream, CUgraph* graph) {
  // The null stream of a _ptsz call is the thread's own default stream.
  return countEnd(stream != nullptr ? stream : CU_STREAM_PER_THREAD, [&] { return callReal(&DriverApi::cuStreamEndCapture_ptsz, stream, graph); });
}
