# mqx_keep_cxx_runtime_private(target): a shared object of ours is loaded into
# programs we did not write (libmqx.so into PyTorch, _mqx.so into a Python
# that has numpy's C++ runtime). A toolchain that links libstdc++ statically
# (the H100 host's /opt/gcc/bin/g++ does: _mqx.so had no NEEDED libstdc++)
# would otherwise export its copy of std::locale, the facet ids and the
# typeinfos, and the process would run two half-merged C++ runtimes:
# `import numpy, mqx; mqx.load_config(...)` jumped into a typeinfo name
# (docs/python.md). Hidden, each copy serves only its own object. Archives
# that are not linked are ignored by the linker.
function(mqx_keep_cxx_runtime_private target)
  target_link_options(${target} PRIVATE "LINKER:--exclude-libs,libstdc++.a:libsupc++.a:libgcc.a:libgcc_eh.a:libfmt.a")
endfunction()
