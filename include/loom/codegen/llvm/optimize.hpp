// LLVM's O3 pipeline (new pass manager) tuned for the TargetMachine, and machine code emission:
// an in-memory object file (what the JIT links and the disk cache stores) or assembly text.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "loom/codegen/llvm/llvm_includes.hpp"
#include "loom/support/error.hpp"

namespace loom::codegen {

/// An LLVMContext whose diagnostics do not go to stderr: remarks and warnings (such as "loop not
/// vectorized" for a vectorize hint LLVM could not honour) are dropped unless LOOM_JIT_REMARKS=1;
/// errors are kept and raised as a loom::Error by check().
class QuietContext {
 public:
  QuietContext() {
    const char* env = std::getenv("LOOM_JIT_REMARKS");
    print_remarks_ = env && *env && std::string(env) != "0";
    context_.setDiagnosticHandlerCallBack(&QuietContext::handle, this);
  }
  llvm::LLVMContext& get() { return context_; }

  void check(const std::string& kernel) const {
    if (errors_.empty()) return;
    std::string all;
    for (const std::string& e : errors_) all += "\n  " + e;
    throw Error(cat("LLVM failed to compile kernel '", kernel, "':", all));
  }

 private:
  static void handle(const llvm::DiagnosticInfo* diagnostic, void* self_ptr) {
    const llvm::DiagnosticInfo& info = *diagnostic;
    auto* self = static_cast<QuietContext*>(self_ptr);
    if (info.getSeverity() != llvm::DS_Error && !self->print_remarks_) return;
    std::string text;
    const auto* remark = llvm::dyn_cast<llvm::DiagnosticInfoOptimizationBase>(&info);
    if (remark && !remark->isLocationAvailable()) {
      // Kernels carry no debug locations, so LLVM would say "<unknown>:0:0": name the function
      // (the kernel, or a kernel's parallel-loop body) and the pass instead.
      text = cat("function '", remark->getFunction().getName().str(), "', ", remark->getPassName().str(),
                 ": ", remark->getMsg());
    } else {
      llvm::raw_string_ostream os(text);
      llvm::DiagnosticPrinterRawOStream printer(os);
      info.print(printer);
      os.flush();
    }
    if (info.getSeverity() == llvm::DS_Error) {
      self->errors_.push_back(text);
    } else {
      std::fprintf(stderr, "loom jit: %s\n", text.c_str());
    }
  }

  llvm::LLVMContext context_;
  bool print_remarks_ = false;
  std::vector<std::string> errors_;
};

/// Checks the generated IR: a failure is a bug in the code generator, reported instead of letting
/// LLVM crash on malformed IR later.
inline void verify_module(const llvm::Module& module) {
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (llvm::verifyModule(module, &os)) {
    os.flush();
    throw InternalError(
        cat("the LLVM backend generated invalid IR for module '", module.getName().str(), "':\n", errors));
  }
}

/// Runs the O3 module pipeline. The TargetMachine supplies the cost model (vector widths, AVX-512)
/// that the loop and SLP vectorizers use.
inline void optimize_module(llvm::Module& module, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  llvm::PassBuilder pb(&tm, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
}

/// Machine code for `module` as an object file or as assembly text. Code generation changes the
/// module (it prepares it for instruction selection): print the IR before calling this.
inline std::string emit_machine_code(llvm::Module& module, llvm::TargetMachine& tm,
                                     llvm::CodeGenFileType kind) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, kind))
    throw Error(cat("LLVM cannot emit ",
                    kind == llvm::CodeGenFileType::ObjectFile ? "object files" : "assembly", " for ",
                    tm.getTargetTriple().str()));
  pm.run(module);
  return std::string(buffer.data(), buffer.size());
}

inline std::string print_module(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  os.flush();
  return text;
}

}  // namespace loom::codegen
