// The configuration's choices (the values of its choice keys), apart from
// Config itself: a component's options struct names the choice it takes
// (PolicyOptions a ReplacementKind) without including the whole
// configuration (STYLE.md section 3).
#pragma once

#include <string>

namespace mqx {

enum class ReplacementKind { Cdr, Lru, Mru, Lfu, Random, Adaptive, Reuse };
enum class EvictionGranularity { Region, Page };
enum class ReferenceDetection { Auto, Advice, Scan, All };
enum class BackendKind { Auto, Cuda, Sim };
// Adaptive: a concurrency limit fed by what the node measures, plus Weight's
// memory check (docs/daemon.md, "Adaptive admission").
enum class AdmissionKind { Weight, Peak, Fix, Adaptive };
enum class MpsMode { Off, Detect, Manage };
// How mqxd places a query on one of the node's devices (docs/daemon.md,
// "Several GPUs").
enum class PlacementKind { Demand, RoundRobin };

// The lower-case names of the configuration file ("cdr", "weight", ...).
std::string toString(ReplacementKind kind);
std::string toString(AdmissionKind kind);
std::string toString(MpsMode mode);
std::string toString(PlacementKind kind);

} // namespace mqx
