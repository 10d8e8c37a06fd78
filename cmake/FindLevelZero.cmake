# Finds the system Level Zero loader (Debian: libze1 + libze-dev) and defines LevelZero::LevelZero.
find_path(LevelZero_INCLUDE_DIR level_zero/ze_api.h)
find_library(LevelZero_LIBRARY NAMES ze_loader libze_loader.so.1)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LevelZero
  REQUIRED_VARS LevelZero_LIBRARY LevelZero_INCLUDE_DIR
  REASON_FAILURE_MESSAGE "install the Level Zero loader: apt-get install libze1 libze-dev")
if(LevelZero_FOUND AND NOT TARGET LevelZero::LevelZero)
  add_library(LevelZero::LevelZero UNKNOWN IMPORTED)
  set_target_properties(LevelZero::LevelZero PROPERTIES
    IMPORTED_LOCATION "${LevelZero_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LevelZero_INCLUDE_DIR}")
endif()
mark_as_advanced(LevelZero_INCLUDE_DIR LevelZero_LIBRARY)
