#!/usr/bin/env bash
# exported_symbols_test.sh [c-only:]LIBRARY...: none of our shared objects may export a
# definition of the C++ runtime: a symbol that libstdc++.so.6 also defines,
# other than an inline (weak) function. Each library is loaded into programs
# with their own C++ runtime (PyTorch, Python with numpy); an exported copy
# of std::locale, a facet id, a vtable or a typeinfo interposes theirs and
# the process runs two half-merged runtimes (cmake/SharedObjects.cmake).
# A toolchain that links libstdc++ statically is what puts them there.
# A library named c-only:PATH (libmqx.so, preloaded into programs we did not
# write) may export no C++ symbol at all: even an inline std:: template
# instance (std::call_once's lambda) interposes the program's and binds it to
# our hidden runtime state. Exit 1 naming the offending symbols, 0 when every
# library is clean.
set -uo pipefail
runtime=${CXX_RUNTIME_LIBRARY:-$(${CXX:-c++} -print-file-name=libstdc++.so.6)}
if ! runtime_symbols=$(nm -D --defined-only "$runtime" 2>/dev/null | awk '{print $NF}' | sed 's/@.*//' | sort -u) ||
   [ -z "$runtime_symbols" ]; then
  echo "exported_symbols_test: cannot read the C++ runtime's symbols from '$runtime' (set CXX_RUNTIME_LIBRARY)" >&2
  exit 1
fi
status=0
for argument in "$@"; do
  library=${argument#c-only:}
  if [ ! -f "$library" ]; then
    echo "exported_symbols_test: no such library: $library" >&2
    status=1
    continue
  fi
  # Weak functions (W) are inline template code, the same wherever compiled;
  # data (V, u: vtables, typeinfos, static members) and strong definitions
  # (T, D, B, R) are state or identity that must exist once.
  leaked=$(nm -D --defined-only "$library" | awk '$(NF-1) != "W" {print $NF}' | sort -u |
           comm -12 - <(echo "$runtime_symbols"))
  if [ "$argument" != "$library" ]; then
    leaked=$( { echo "$leaked"; nm -D --defined-only "$library" | awk '{print $NF}' | grep '^_Z'; } | grep . | sort -u)
  fi
  if [ -n "$leaked" ]; then
    what="definitions of $runtime"
    [ "$argument" != "$library" ] && what="C++ symbols (a C-only library)"
    echo "$library exports $(echo "$leaked" | wc -l) symbols it must not, $what, e.g.:"
    echo "$leaked" | head -n 8 | c++filt | sed 's/^/  /'
    status=1
  else
    echo "$library: exports no definition of the C++ runtime ($(nm -D --defined-only "$library" | wc -l) symbols exported)"
  fi
done
exit $status
