#!/usr/bin/env bash
# PyTorch's allocator modes and CUDA graphs under libmqx at a device limit
# below the footprint, each compared with a native run. Skips (77) without a
# GPU or PyTorch.   run_torch_modes.sh PROBE LIBMQX SCRIPT WORKDIR [LIMIT]
set -u
probe=$1 libmqx=$2 script=$3 work=$4 limit=${5:-128MiB}
"$probe" || exit $?
python=${PYTHON:-python3}
"$python" -c 'import torch' 2>/dev/null || { echo "no PyTorch: skipping"; exit 77; }
mkdir -p "$work"
export PYTHONUNBUFFERED=1
env -u LD_PRELOAD "$python" "$script" compute "$work/native.json" || exit $?
status=0
for mode in default expandable_segments:True backend:cudaMallocAsync; do
  name=${mode//[:]/-}
  conf=()
  [ "$mode" = default ] || conf=(PYTORCH_CUDA_ALLOC_CONF=$mode)
  if env "${conf[@]}" LD_PRELOAD="$libmqx" MQX_MEMORY_DEVICE_MEMORY_LIMIT="$limit" \
    "$python" "$script" compute "$work/mqx-$name.json"; then
    "$python" "$script" compare "$work/native.json" "$work/mqx-$name.json" || status=1
  else
    echo "$mode: failed under mqx"
    status=1
  fi
done
exit $status
