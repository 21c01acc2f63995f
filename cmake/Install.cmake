# Installing mqx (issue 18): `cmake --install build --prefix PREFIX` puts
# mqxd, mqx-run, libmqx.so, the advice library and its header, the default
# configuration (etc/mqx/mqx.toml) and the docs under PREFIX; a consumer
# project finds the advice API with find_package(mqx) as mqx::advice.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The commit the build was configured from, for --version (a carried copy
# without .git names its commit in .carry/COMMIT).
set(MQX_GIT_COMMIT "unknown")
if(EXISTS ${CMAKE_SOURCE_DIR}/.carry/COMMIT)
  file(READ ${CMAKE_SOURCE_DIR}/.carry/COMMIT MQX_GIT_COMMIT)
  string(STRIP "${MQX_GIT_COMMIT}" MQX_GIT_COMMIT)
endif()
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS ${CMAKE_SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${CMAKE_SOURCE_DIR} describe --always --dirty --abbrev=12
                  OUTPUT_VARIABLE MQX_GIT_DESCRIBE OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE MQX_GIT_FAILED)
  if(NOT MQX_GIT_FAILED AND MQX_GIT_DESCRIBE)
    set(MQX_GIT_COMMIT ${MQX_GIT_DESCRIBE})
  endif()
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/version.hpp.in ${CMAKE_BINARY_DIR}/generated/mqx/version.hpp @ONLY)

# mqx_install_package(): the export set, package config and version file;
# called once all installed targets exist.
function(mqx_install_package)
  install(EXPORT mqxTargets NAMESPACE mqx:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mqx)
  configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/mqxConfig.cmake.in
    ${CMAKE_BINARY_DIR}/generated/mqxConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mqx)
  write_basic_package_version_file(${CMAKE_BINARY_DIR}/generated/mqxConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES ${CMAKE_BINARY_DIR}/generated/mqxConfig.cmake ${CMAKE_BINARY_DIR}/generated/mqxConfigVersion.cmake
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mqx)
  # The configuration goes to PREFIX/etc/mqx, except under the prefix /usr
  # (the .deb), whose configuration lives in /etc (the GNU convention that
  # GNUInstallDirs applies at configure time, applied here at install time,
  # where the prefix is known).
  install(CODE "
    if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
      set(MQX_INSTALL_SYSCONFDIR /etc)
    else()
      set(MQX_INSTALL_SYSCONFDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SYSCONFDIR}\")
    endif()
    file(INSTALL \"${CMAKE_SOURCE_DIR}/configs/default.toml\" DESTINATION \"\${MQX_INSTALL_SYSCONFDIR}/mqx\" RENAME mqx.toml)
  ")
  install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
  # The systemd user unit, its paths filled in at install time: the prefix
  # is the one `cmake --install --prefix` was given, not the configured one.
  install(CODE "
    set(MQX_UNIT_BINDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
    set(MQX_UNIT_SYSCONFDIR \"\${MQX_INSTALL_SYSCONFDIR}\")
    set(MQX_UNIT_DOCDIR \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DOCDIR}\")
    configure_file(\"${CMAKE_SOURCE_DIR}/packaging/mqxd.service.in\" \"${CMAKE_BINARY_DIR}/generated/mqxd.service\" @ONLY)
    file(INSTALL \"${CMAKE_BINARY_DIR}/generated/mqxd.service\"
         DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/systemd/user\")
  ")
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md")
  # Slurm (docs/cluster.md, "Slurm"): the wrappers for users, the Prolog,
  # TaskProlog and slurm.conf lines for the administrator.
  install(PROGRAMS ${CMAKE_SOURCE_DIR}/deploy/slurm/mqx-sbatch ${CMAKE_SOURCE_DIR}/deploy/slurm/mqx-srun
          DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(PROGRAMS ${CMAKE_SOURCE_DIR}/deploy/slurm/prolog ${CMAKE_SOURCE_DIR}/deploy/slurm/task-prolog
          DESTINATION ${CMAKE_INSTALL_DATADIR}/mqx/slurm)
  install(FILES ${CMAKE_SOURCE_DIR}/deploy/slurm/slurm-mqx.conf.in ${CMAKE_SOURCE_DIR}/deploy/slurm/slurm.env.example
          DESTINATION ${CMAKE_INSTALL_DATADIR}/mqx/slurm)
endfunction()

# mqx_debian_package(): `cpack -G DEB` in the build folder makes mqx_<version>_<arch>.deb
# of everything above, installed under /usr (configuration in /etc/mqx, a
# conffile that an upgrade keeps when the administrator changed it; the unit
# under /usr/lib/systemd/user; the Python package in /usr/lib/python3/dist-packages). Its dependencies are the
# distribution's packages of the shared libraries it links, found by
# dpkg-shlibdeps where installed (dpkg-dev), else stated here; libcuda comes
# with the NVIDIA driver and is loaded at run time, so it is no dependency.
function(mqx_debian_package)
  set(CPACK_GENERATOR DEB)
  set(CPACK_PACKAGE_NAME mqx)
  set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU query processes sharing a GPU without aborting: libmqx.so, mqxd, mqx-run")
  set(CPACK_PACKAGE_CONTACT "mqx developers")
  set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
  set(CPACK_DEBIAN_PACKAGE_SECTION devel)
  find_program(MQX_DPKG_SHLIBDEPS dpkg-shlibdeps)
  if(MQX_DPKG_SHLIBDEPS)
    set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  else()
    set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6, libstdc++6, libgcc-s1, libfmt9")
  endif()
  file(WRITE ${CMAKE_BINARY_DIR}/generated/debian/conffiles "/etc/mqx/mqx.toml\n")
  set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/generated/debian/conffiles)
  include(CPack)
endfunction()
