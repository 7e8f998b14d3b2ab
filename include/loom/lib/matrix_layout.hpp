// How a library kernel's matrix is stored: row-major or column-major. Its own header so that the
// CPU GEMM (lib/gemm.hpp) and the tensor-core GPU GEMM (lib/gpu_gemm.hpp) name one enum without
// either including the other.
#pragma once

namespace loom::lib {

/// How a matrix is stored: row-major (its rows contiguous) or column-major (its columns contiguous,
/// as BLAS and Fortran store them).
enum class Layout { RowMajor, ColMajor };

}  // namespace loom::lib
