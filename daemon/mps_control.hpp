// MpsControl: the MPS control daemon as mqxd sees it (docs/architecture.md
// decision 11: kernels of different processes only run concurrently under
// MPS). daemon.mps = "detect" reports whether one runs; "manage" also starts
// one when none runs ("nvidia-cuda-mps-control -d") and stops the one it
// started at shutdown ("echo quit | nvidia-cuda-mps-control"). A control
// daemon runs when its control pipe exists in CUDA_MPS_PIPE_DIRECTORY
// (default /tmp/nvidia-mps), which is also how its clients find it.
#pragma once

#include <string>

#include "config/config.hpp"

namespace mqx::daemon {

class MpsControl {
public:
  // Throws std::runtime_error (naming the key) when "manage" cannot start one.
  explicit MpsControl(const Config& config);
  ~MpsControl();
  MpsControl(const MpsControl&) = delete;
  MpsControl& operator=(const MpsControl&) = delete;

  // Whether a control daemon runs now.
  bool running() const;
  bool startedHere() const { return startedHere_; }
  const std::string& pipeDirectory() const { return pipeDirectory_; }

private:
  // Runs the control program with `argument` (may be empty), `input` on its
  // standard input; its exit status, or -1 when it could not be run.
  int runControl(const std::string& argument, const std::string& input) const;
  bool waitUntil(bool wantRunning, int milliseconds) const;
  void start();
  void stop();

  MpsMode mode_;
  std::string control_;
  std::string pipeDirectory_;
  std::string logDirectory_;
  bool startedHere_ = false;
};

} // namespace mqx::daemon
