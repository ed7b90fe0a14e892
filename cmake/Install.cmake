# `cmake --install build --prefix DIR` (doc/user-guide.md, "Install"): the executable, the
# report entry point with the postprocess package, the suites and the docs, in the GNU layout.
# The installed files find each other relative to bin/, so the prefix can be moved.
include(GNUInstallDirs)
set(DEPTHBENCH_SHARE_DIR ${CMAKE_INSTALL_DATADIR}/depthbench)

# The executable links CUDA and other libraries outside the system paths: keep them found.
set_target_properties(depthbench PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS depthbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# `depthbench plan demo.ini` finds a shipped suite from the executable's folder.
file(RELATIVE_PATH suites_from_bin /${CMAKE_INSTALL_BINDIR} /${DEPTHBENCH_SHARE_DIR}/suites)
set_source_files_properties(${PROJECT_SOURCE_DIR}/src/app/installed_files.cpp DIRECTORY src
                            PROPERTIES COMPILE_DEFINITIONS
                            DEPTHBENCH_SUITES_FROM_BIN="${suites_from_bin}")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/input/ DESTINATION ${DEPTHBENCH_SHARE_DIR}/suites
        FILES_MATCHING PATTERN "*.ini")
# `depthbench export --format hf` copies the modelling code of the designs from here.
file(RELATIVE_PATH hf_modeling_from_bin /${CMAKE_INSTALL_BINDIR} /${DEPTHBENCH_SHARE_DIR}/hf_modeling)
set_property(SOURCE ${PROJECT_SOURCE_DIR}/src/app/installed_files.cpp DIRECTORY src APPEND
             PROPERTY COMPILE_DEFINITIONS DEPTHBENCH_HF_MODELING_FROM_BIN="${hf_modeling_from_bin}")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/io/hf_modeling/ DESTINATION ${DEPTHBENCH_SHARE_DIR}/hf_modeling
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)

# depthbench-report: one copy for the build tree (the clone's postprocess/), one for the prefix.
set(REPORT_PACKAGE_PARENT "\"${PROJECT_SOURCE_DIR}\"")
configure_file(scripts/depthbench-report.in ${CMAKE_BINARY_DIR}/depthbench-report @ONLY)
file(RELATIVE_PATH python_from_bin /${CMAKE_INSTALL_BINDIR} /${DEPTHBENCH_SHARE_DIR}/python)
set(REPORT_PACKAGE_PARENT "\"\$here/${python_from_bin}\"")
configure_file(scripts/depthbench-report.in ${CMAKE_BINARY_DIR}/install/depthbench-report @ONLY)
install(PROGRAMS ${CMAKE_BINARY_DIR}/install/depthbench-report DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/postprocess DESTINATION ${DEPTHBENCH_SHARE_DIR}/python
        FILES_MATCHING PATTERN "*.py" PATTERN "*.csv" PATTERN "__pycache__" EXCLUDE)

# The docs keep their relative links: README.md beside doc/.
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${DEPTHBENCH_SHARE_DIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/doc/ DESTINATION ${DEPTHBENCH_SHARE_DIR}/doc
        FILES_MATCHING PATTERN "*.md")
