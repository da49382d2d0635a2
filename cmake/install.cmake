# install.cmake — what `cmake --install` puts under the prefix:
#   lib/libxir.a, lib/libxir.so*            the core library (the shared one exports xir_* only)
#   include/xir*.h                          the public headers
#   bin/xir                                 the command (when XIR_BUILD_TOOLS)
#   lib/pkgconfig/xir.pc                    pkg-config: -lxir; --static adds Libs.private
#   lib/cmake/xir/xirConfig*.cmake, xirTargets*.cmake   find_package(xir): xir::xir (shared,
#                                           or the static one when built without it), xir::xir_static
include(CMakePackageConfigHelpers)

file(GLOB XIR_PUBLIC_HEADERS ${PROJECT_SOURCE_DIR}/include/*.h)
install(FILES ${XIR_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ${XIR_INSTALL_TARGETS} EXPORT xirTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(XIR_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/xir)
install(EXPORT xirTargets NAMESPACE xir:: DESTINATION ${XIR_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/xirConfig.cmake.in
  ${PROJECT_BINARY_DIR}/xirConfig.cmake INSTALL_DESTINATION ${XIR_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/xirConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/xirConfig.cmake ${PROJECT_BINARY_DIR}/xirConfigVersion.cmake
  DESTINATION ${XIR_CMAKE_DIR})

# xir.pc, relocatable: the prefix is found from the file's own directory.
set(XIR_PC_PREFIX "\${pcfiledir}")
string(REPLACE "/" ";" _xir_pc_parts "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
foreach(_p ${_xir_pc_parts})
  string(APPEND XIR_PC_PREFIX "/..")
endforeach()
set(XIR_PC_LIBS_PRIVATE "${XIR_LLVM_LINK_STRING} -lpthread -lm")
configure_file(${PROJECT_SOURCE_DIR}/cmake/xir.pc.in ${PROJECT_BINARY_DIR}/xir.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/xir.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
