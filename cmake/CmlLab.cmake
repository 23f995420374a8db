# cml_add_lab(): turns a lab folder pair into targets and CTest tests. A lab's own
# CMakeLists.txt is this one call. For labs/NN_topic/ (and solutions/NN_topic/ if present):
#
#   labs/NN_topic/topic.cu        the student's file          -> labNN_student (library)
#   labs/NN_topic/*.cu (others)   given code, e.g. baseline   -> labNN_given (library)
#   labs/NN_topic/tests/*.cpp|cu  public tests
#   labs/NN_topic/bench/*.cpp|cu  the bench: one function declared with CML_BENCH (no main:
#                                 the harness's, cml_bench_main, is linked in)
#   solutions/NN_topic/topic.cu   the reference               -> labNN_solution (library)
#   solutions/NN_topic/tests/*    hidden tests
#
# The test sources are compiled once each, into the object libraries labNN_public_tests and
# labNN_hidden_tests, which every test executable below links.
# Executables: labNN_tests_student (public tests on the student's code),
# labNN_tests_solution (public + hidden on the reference), labNN_hidden_student (hidden on
# the student's code, for the grader), labNN_bench_student / labNN_bench_solution, and
# labNN_bench_checker (the bench against labNN_runner, for the grader).
# CTest: labNN.{solution,student}.{host,gpu} and, where the solution exists,
# labNN.skeleton.{host,gpu}, which pass when the committed skeleton fails every test case
# that needs the student's work. Labels: host|gpu, labNN, solution|student|skeleton.
#
# Options: BENCH_LIBRARIES <libs...>  extra libraries for the bench only (e.g. CUDA::cublas)
#          LIBRARIES <libs...>        extra libraries for the lab's code and tests
#          TIMEOUT <seconds>          per CTest test (default 300)
include_guard(GLOBAL)

function(_cml_glob out dir)
  file(GLOB _files LIST_DIRECTORIES false "${dir}/*.cpp" "${dir}/*.cu")
  list(SORT _files)
  set(${out} "${_files}" PARENT_SCOPE)
endfunction()

function(_cml_add_ctest name target spec labels timeout)
  add_test(NAME ${name} COMMAND ${target} "${spec}")
  set_tests_properties(${name} PROPERTIES LABELS "${labels}" SKIP_RETURN_CODE 77
                       TIMEOUT ${timeout})
endfunction()

function(cml_add_lab)
  cmake_parse_arguments(LAB "" "TIMEOUT" "BENCH_LIBRARIES;LIBRARIES" ${ARGN})
  if(NOT LAB_TIMEOUT)
    set(LAB_TIMEOUT 300)
  endif()
  get_filename_component(folder "${CMAKE_CURRENT_SOURCE_DIR}" NAME)
  if(NOT folder MATCHES "^([0-9][0-9])_(.+)$")
    message(FATAL_ERROR "lab folder '${folder}' is not named NN_topic")
  endif()
  set(nn "${CMAKE_MATCH_1}")
  set(topic "${CMAKE_MATCH_2}")
  set(lab "lab${nn}")
  set(lab_dir "${CMAKE_CURRENT_SOURCE_DIR}")
  set(solution_dir "${PROJECT_SOURCE_DIR}/solutions/${folder}")
  set(student_file "${lab_dir}/${topic}.cu")
  if(NOT EXISTS "${student_file}")
    message(FATAL_ERROR "${folder}: the student file ${topic}.cu is missing")
  endif()

  # Given code (baseline kernels and the like): every other .cu in the lab folder.
  file(GLOB given LIST_DIRECTORIES false "${lab_dir}/*.cu")
  list(REMOVE_ITEM given "${student_file}")
  set(given_target "")
  if(given)
    add_library(${lab}_given STATIC ${given})
    target_include_directories(${lab}_given PUBLIC "${lab_dir}")
    target_link_libraries(${lab}_given PUBLIC cml ${LAB_LIBRARIES})
    set(given_target ${lab}_given)
  endif()

  set(variants student)
  set(compiled_variants "")
  if(CML_STUDENT_BUILD)
    # Grading: the student's file was compiled in a jail, in a build tree of its own made
    # from a source tree without solutions/ or hidden tests; this tree only links it.
    add_library(${lab}_student STATIC IMPORTED)
    set_target_properties(${lab}_student PROPERTIES IMPORTED_LOCATION
      "${CML_STUDENT_BUILD}/labs/${folder}/${CMAKE_STATIC_LIBRARY_PREFIX}${lab}_student${CMAKE_STATIC_LIBRARY_SUFFIX}")
    target_include_directories(${lab}_student INTERFACE "${lab_dir}")
    target_link_libraries(${lab}_student INTERFACE cml ${given_target} ${LAB_LIBRARIES})
  else()
    add_library(${lab}_student STATIC "${student_file}")
    list(APPEND compiled_variants student)
  endif()
  if(EXISTS "${solution_dir}/${topic}.cu")
    list(APPEND variants solution)
    list(APPEND compiled_variants solution)
    add_library(${lab}_solution STATIC "${solution_dir}/${topic}.cu")
  endif()
  foreach(v IN LISTS compiled_variants)
    target_include_directories(${lab}_${v} PUBLIC "${lab_dir}")
    target_link_libraries(${lab}_${v} PUBLIC cml ${given_target} ${LAB_LIBRARIES})
    # The student's code is compiled with line info so sanitizer reports name their lines.
    target_compile_options(${lab}_${v} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
  endforeach()

  if(CML_BUILD_TESTS)
    _cml_glob(public_tests "${lab_dir}/tests")
    _cml_glob(hidden_tests "${solution_dir}/tests")
    # The test sources are compiled once, as object libraries (labNN_public_tests,
    # labNN_hidden_tests), and linked into every executable that runs them: they see the
    # lab's header, never which variant implements it.
    set(test_objects "")
    foreach(kind IN ITEMS public hidden)
      if(${kind}_tests)
        add_library(${lab}_${kind}_tests OBJECT ${${kind}_tests})
        list(APPEND test_objects ${lab}_${kind}_tests)
        target_include_directories(${lab}_${kind}_tests PRIVATE "${lab_dir}" "${lab_dir}/tests")
        target_link_libraries(${lab}_${kind}_tests PRIVATE cml_test_main ${given_target}
                              ${LAB_LIBRARIES})
        # __FILE__ in an assertion names its file from the source root (labs/...,
        # solutions/...), never the folder the tree was built in (a grader's work folder or
        # the reference cache).
        target_compile_options(${lab}_${kind}_tests PRIVATE
          "$<$<COMPILE_LANGUAGE:CXX>:-ffile-prefix-map=${PROJECT_SOURCE_DIR}/=>"
          "$<$<COMPILE_LANGUAGE:CUDA>:SHELL:-Xcompiler -ffile-prefix-map=${PROJECT_SOURCE_DIR}/=>")
      endif()
    endforeach()
    set(test_targets "")
    if(public_tests)
      add_executable(${lab}_tests_student)
      target_link_libraries(${lab}_tests_student PRIVATE ${lab}_public_tests cml_test_main
                            ${lab}_student)
      list(APPEND test_targets ${lab}_tests_student)
      if(TARGET ${lab}_solution)
        add_executable(${lab}_tests_solution)
        target_link_libraries(${lab}_tests_solution PRIVATE ${test_objects} cml_test_main
                              ${lab}_solution)
        list(APPEND test_targets ${lab}_tests_solution)
      endif()
    endif()
    if(hidden_tests)
      add_executable(${lab}_hidden_student)
      target_link_libraries(${lab}_hidden_student PRIVATE ${lab}_hidden_tests cml_test_main
                            ${lab}_student)
      list(APPEND test_targets ${lab}_hidden_student)
    endif()
    # The grader's pair (cml/remote.hpp): labNN_checker and labNN_hidden_checker hold the
    # tests, Catch2 and the proxies of the lab's interface, never the student's object;
    # labNN_runner holds the student's object and the dispatch loop, and makes each call a
    # checker sends it. The lab lists its interface's functions in tests/remote_calls.hpp.
    set(remote_calls "${lab_dir}/tests/remote_calls.hpp")
    if(EXISTS "${remote_calls}")
      add_library(${lab}_remote_proxy OBJECT "${PROJECT_SOURCE_DIR}/common/src/remote_proxy.cpp")
      add_library(${lab}_remote_serve OBJECT "${PROJECT_SOURCE_DIR}/common/src/remote_serve.cpp")
      foreach(part IN ITEMS proxy serve)
        target_include_directories(${lab}_remote_${part} PRIVATE "${lab_dir}" "${lab_dir}/tests")
        target_link_libraries(${lab}_remote_${part} PRIVATE cml ${given_target} ${LAB_LIBRARIES})
        target_compile_definitions(${lab}_remote_${part} PRIVATE
          CML_REMOTE_CALLS_HEADER="remote_calls.hpp")
      endforeach()
      foreach(kind IN ITEMS public hidden)
        if(${kind}_tests)
          set(checker ${lab}_checker)
          if(kind STREQUAL "hidden")
            set(checker ${lab}_hidden_checker)
          endif()
          add_executable(${checker})
          target_link_libraries(${checker} PRIVATE ${lab}_${kind}_tests cml_test_main
                                ${lab}_remote_proxy ${given_target} ${LAB_LIBRARIES})
          cml_share_allocations(${checker})
          list(APPEND test_targets ${checker})
        endif()
      endforeach()
      foreach(v IN LISTS variants)
        set(runner ${lab}_runner)
        if(v STREQUAL "solution")
          set(runner ${lab}_runner_solution)
        endif()
        add_executable(${runner})
        target_link_libraries(${runner} PRIVATE cml_runner_main ${lab}_remote_serve ${lab}_${v})
        list(APPEND test_targets ${runner})
      endforeach()
      # The public tests through the pair, on the reference: what the grader runs, checked.
      if(TARGET ${lab}_runner_solution AND TARGET ${lab}_checker)
        foreach(layer host gpu)
          _cml_add_ctest(${lab}.remote.${layer} ${lab}_checker "[${layer}]"
                         "${layer};${lab};solution;remote" ${LAB_TIMEOUT})
          set_tests_properties(${lab}.remote.${layer} PROPERTIES
            ENVIRONMENT "CML_RUNNER=$<TARGET_FILE:${lab}_runner_solution>")
        endforeach()
      endif()
    endif()
    cml_count_launches(${test_targets})  # cml::launch_count() sees every kernel launch

    foreach(v IN LISTS variants)
      if(TARGET ${lab}_tests_${v})
        foreach(layer host gpu)
          _cml_add_ctest(${lab}.${v}.${layer} ${lab}_tests_${v} "[${layer}]"
                         "${layer};${lab};${v}" ${LAB_TIMEOUT})
        endforeach()
      endif()
    endforeach()
    # The committed skeleton must fail every test that needs the student's work.
    if(TARGET ${lab}_solution AND TARGET ${lab}_tests_student)
      foreach(layer host gpu)
        add_test(NAME ${lab}.skeleton.${layer}
                 COMMAND ${Python3_EXECUTABLE} -m grader expect-fail
                         $<TARGET_FILE:${lab}_tests_student> "[${layer}]"
                 WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}")
        set_tests_properties(${lab}.skeleton.${layer} PROPERTIES
          LABELS "${layer};${lab};skeleton" SKIP_RETURN_CODE 77 TIMEOUT ${LAB_TIMEOUT})
      endforeach()
    endif()
  endif()

  _cml_glob(bench_sources "${lab_dir}/bench")
  # Bench-only code that gives an answer away (lab 04's ladder rungs) lives beside the
  # solution: built in where the tree has it (CML_BENCH_EXTRAS=1), absent from a student copy.
  _cml_glob(bench_extras "${solution_dir}/bench")
  set(extras 0)
  if(bench_extras)
    set(extras 1)
  endif()
  if(bench_sources)
    foreach(v IN LISTS variants)
      add_executable(${lab}_bench_${v} ${bench_sources} ${bench_extras})
      target_link_libraries(${lab}_bench_${v} PRIVATE cml_bench_main ${lab}_${v}
                            ${LAB_BENCH_LIBRARIES})
      target_compile_definitions(${lab}_bench_${v} PRIVATE CML_LAB="${folder}" CML_VARIANT="${v}"
                                 CML_BENCH_EXTRAS=${extras})
      if(bench_extras)
        target_include_directories(${lab}_bench_${v} PRIVATE "${solution_dir}/bench")
      endif()
      cml_count_launches(${lab}_bench_${v})
    endforeach()
    # The grader's bench of a student (cml/remote.hpp): the same bench, its inputs, clock,
    # verification and document in this process, with the proxies of the lab's interface in
    # place of the student's object; labNN_runner carries out the calls.
    if(TARGET ${lab}_remote_proxy)
      set(checker ${lab}_bench_checker)
      add_executable(${checker} ${bench_sources} ${bench_extras})
      target_include_directories(${checker} PRIVATE "${lab_dir}")
      target_link_libraries(${checker} PRIVATE cml_bench_main ${lab}_remote_proxy cml
                            ${given_target} ${LAB_LIBRARIES} ${LAB_BENCH_LIBRARIES})
      target_compile_definitions(${checker} PRIVATE CML_LAB="${folder}" CML_VARIANT="student"
                                 CML_BENCH_EXTRAS=${extras})
      if(bench_extras)
        target_include_directories(${checker} PRIVATE "${solution_dir}/bench")
      endif()
      cml_share_allocations(${checker})
      cml_count_launches(${checker})
    endif()
  endif()
endfunction()
