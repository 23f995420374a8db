// Lab 05: @REPO_ROOT@ is replaced by the grader's checkout when the case is made.
#include "@REPO_ROOT@/solutions/05_boundary_checks/boundary_checks.cu"
