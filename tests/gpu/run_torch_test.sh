#!/usr/bin/env bash
# The PyTorch check: the same computation without and with libmqx, results
# compared. Skips (77) without a GPU or without PyTorch.
#   run_torch_test.sh PROBE LIBMQX SCRIPT WORKDIR
set -u
probe=$1 libmqx=$2 script=$3 work=$4
"$probe" || exit $?
python=${PYTHON:-python3}
"$python" -c 'import torch' 2>/dev/null || { echo "no PyTorch: skipping"; exit 77; }
mkdir -p "$work"
export PYTHONUNBUFFERED=1
env -u LD_PRELOAD "$python" "$script" compute "$work/native.pt" || exit $?
LD_PRELOAD="$libmqx" "$python" "$script" compute "$work/mqx.pt" || exit $?
"$python" "$script" compare "$work/native.pt" "$work/mqx.pt"
