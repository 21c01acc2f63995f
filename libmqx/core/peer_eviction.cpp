#include "core/peer_eviction.hpp"

#include <algorithm>
#include <chrono>

#include "common/log.hpp"
#include "trace/trace_span.hpp"
#include "trace/trace_tracks.hpp"

namespace mqx {

// While this process waits for others it holds its manager's lock: an owner
// that asks it meanwhile gets 0 at once (waitingForOtherProcesses), instead
// of waiting for a lock that is not given up until the others answer.
class PeerEviction::Waiting {
public:
  explicit Waiting(std::atomic<bool>& flag) : flag_(flag) { flag_.store(true, std::memory_order_release); }
  ~Waiting() { flag_.store(false, std::memory_order_release); }
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;

private:
  std::atomic<bool>& flag_;
};

PeerEviction::PeerEviction(std::chrono::milliseconds evictionTimeout, DeviceBudget& budget, Statistics& statistics,
                           trace::TraceRecorder* trace)
    : evictionTimeout_(evictionTimeout), budget_(budget), statistics_(statistics), trace_(trace),
      peers_(budget.peers()) {}

namespace {

PublishedInputs inputsOf(const Region& region) {
  return PublishedInputs{region.id, EvictionCandidate{0, region.backedBytes(), region.dirtyBytes(), region.lastUse,
                                                      region.useCount, region.previousUse}};
}

} // namespace

void PeerEviction::publish(const Region& region) {
  if (peers_ == nullptr) return;
  const PublishedInputs one = inputsOf(region);
  peers_->publish({&one, 1});
}

void PeerEviction::publish(std::span<const PageUse> uses) {
  if (peers_ == nullptr) return;
  std::vector<PublishedInputs> regions;
  for (const PageUse& use : uses)
    if (regions.empty() || regions.back().region != use.region->id) regions.push_back(inputsOf(*use.region));
  peers_->publish(regions);
}

void PeerEviction::collect(const std::vector<PeerCandidate>& refused, std::vector<PeerCandidate>* out) {
  if (peers_ == nullptr) return;
  std::vector<PeerCandidate> published;
  peers_->collect(&published);
  for (const PeerCandidate& peer : published)
    if (std::none_of(refused.begin(), refused.end(),
                     [&](const PeerCandidate& no) { return no.owner == peer.owner && no.region == peer.region; }))
      out->push_back(peer);
}

Status PeerEviction::evictAt(const PeerCandidate& victim, std::size_t bytes, std::vector<PeerCandidate>* refused) {
  std::size_t freed = 0;
  {
    Waiting waiting(waitingForOthers_);
    trace::TraceSpan span(trace_, "evict peer region", "eviction", trace::kCurrentThreadTrack);
    span.argument("owner_slot", victim.owner).argument("region", victim.region).argument("bytes", bytes);
    freed = peers_->evictAt(victim, bytes);
    span.argument("freed", freed);
  }
  if (freed > 0) {
    ++statistics_.peerEvictions;
    return Status::Success;
  }
  refused->push_back(victim);
  return Status::NotFound;
}

PeerReclaim PeerEviction::reclaimElsewhere(std::size_t bytes) {
  Waiting waiting(waitingForOthers_);
  if (peers_ == nullptr) return budget_.reclaimElsewhere(bytes) ? PeerReclaim::Freed : PeerReclaim::NobodyElseHolds;
  return peers_->reclaim(bytes);
}

bool PeerEviction::waitForTurn(std::size_t bytes, LocalVictims& local,
                               std::optional<std::chrono::steady_clock::time_point> giveUpAt) {
  // The older processes may need more than this operation gave back: what
  // this process still holds (its other regions and the earlier content of
  // the regions this operation names, which it reloads after its turn).
  // Their requests come to this thread, which holds the manager's lock
  // (EvictionHandoff).
  //
  // The wait has no deadline (docs/daemon.md, "Queue or evict, never
  // abort"): the oldest waiting process never yields, so it proceeds, and
  // this one's turn comes when the older ones got their memory. With 13
  // queries at once a young one may yield for many seconds; the former 4 x
  // daemon.eviction_timeout_ms deadline failed it while the older ones were
  // running. It gives up only when the node stops progressing altogether.
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto limit = stallLimit(evictionTimeout_.count());
  auto nextReport = start + limit;
  ProgressWatch watch(limit, peers_->progress());
  auto evictForOlder = [this, &local](std::size_t bytes, std::uint64_t preferred) {
    const std::size_t freed = evictForOtherProcess(bytes, preferred, local);
    statistics_.bytesEvictedWhileYielding += freed;
    return freed;
  };
  Waiting waiting(waitingForOthers_);
  handoff_.open();
  bool turn = true;
  while (peers_->mustYield()) {
    handoff_.serve(std::chrono::milliseconds(1), evictForOlder);
    const auto now = Clock::now();
    if (giveUpAt && now >= *giveUpAt) {
      turn = false;
      break;
    }
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
    if (watch.stalled(peers_->progress())) {
      log(LogLevel::Warn,
          "an operation that needs {} bytes yielded {} ms to older processes waiting for device memory, and nothing "
          "on the node progressed for {} ms (4 x daemon.eviction_timeout_ms): out of memory; {}",
          bytes, waited, limit.count(), peers_->describeNode());
      turn = false;
      break;
    }
    if (now >= nextReport) {
      nextReport = now + limit;
      log(LogLevel::Info,
          "an operation that needs {} bytes has yielded {} ms to older processes waiting for device "
          "memory; {}",
          bytes, waited, peers_->describeNode());
    }
  }
  handoff_.close();
  return turn;
}

std::size_t PeerEviction::evictForOtherProcess(std::size_t bytes, RegionId preferred, LocalVictims& local) {
  std::size_t freed = 0;
  trace::TraceSpan span(trace_, "evict for another process", "eviction", trace::kCurrentThreadTrack);
  span.argument("bytes", bytes).argument("preferred_region", preferred);
  // The spare first: budget held idle, given without moving a byte.
  freed += local.giveSpare();
  // The region the requester chose among every process's, if it is still
  // evictable (its published state may be stale).
  if (preferred != 0 && freed < bytes) freed += local.evictRegionNow(preferred);
  while (freed < bytes) {
    const std::size_t more = local.evictBestNow();
    if (more == 0) break;
    freed += more;
  }
  span.argument("freed", freed);
  return freed;
}

} // namespace mqx
