// The process's one ORC LLJIT (created on first use, thread-safe) and the linking of kernel object
// files into it: each kernel gets its own JITDylib, removed when the last Kernel using it is gone.
// Kernels resolve the loom_rt_* runtime functions and libc/libm by name.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "loom/codegen/kernel_abi.hpp"
#include "loom/codegen/llvm/llvm_includes.hpp"
#include "loom/codegen/llvm/target_machine.hpp"
#include "loom/ir/extern_c.hpp"
#include "loom/runtime/jit_runtime.hpp"
#include "loom/support/error.hpp"

namespace loom::runtime {

class OrcJit {
 public:
  /// Created on first use and never destroyed, so that kernels held in static storage can release
  /// their code at exit in any order.
  static OrcJit& global() {
    static OrcJit* jit = new OrcJit();
    return *jit;
  }

  struct Linked {
    KernelEntry entry = nullptr;
    std::shared_ptr<void> owner;  // removes the JITDylib when the last reference goes
  };

  /// Links `object` (an ELF object file in memory) into a fresh JITDylib and returns the address
  /// of `symbol`. `kernel` names the kernel in error messages.
  Linked link(const std::string& object, const std::string& symbol, const std::string& kernel) {
    llvm::orc::ExecutionSession& session = jit_->getExecutionSession();
    session_errors().clear();
    llvm::Expected<llvm::orc::JITDylib&> created =
        jit_->createJITDylib("loom.kernel." + std::to_string(counter_.fetch_add(1)));
    if (!created)
      throw Error(
          cat("kernel '", kernel, "': the JIT cannot create a library: ", message(created.takeError())));
    llvm::orc::JITDylib& jd = *created;
    jd.addToLinkOrder(*runtime_);
    define_extern_c_functions(jd, object, kernel);
    std::shared_ptr<void> owner(&jd, [&session](void* p) {
      llvm::consumeError(session.removeJITDylib(*static_cast<llvm::orc::JITDylib*>(p)));
    });
    if (llvm::Error e = jit_->addObjectFile(jd, llvm::MemoryBuffer::getMemBufferCopy(object, symbol)))
      throw Error(cat("kernel '", kernel, "': the JIT cannot load its object code: ", message(std::move(e))));
    llvm::Expected<llvm::orc::ExecutorAddr> address = jit_->lookup(jd, symbol);
    if (!address) {
      std::string why = message(address.takeError());
      if (!session_errors().empty()) why = session_errors();  // the cause, e.g. "Symbols not found: [ f ]"
      throw Error(cat("kernel '", kernel, "': linking its machine code failed: ", why,
                      ". A kernel calls only the runtime, libm, and C functions registered with "
                      "loom::register_extern_c(name, &function) in this process"));
    }
    return Linked{address->toPtr<KernelEntry>(), std::move(owner)};
  }

 private:
  /// Functions registered with register_extern_c that the object calls, bound by name to their
  /// registered addresses in the kernel's own library (ahead of the process's symbols).
  void define_extern_c_functions(llvm::orc::JITDylib& jd, const std::string& object,
                                 const std::string& kernel) {
    llvm::Expected<std::unique_ptr<llvm::object::ObjectFile>> file =
        llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(object, kernel));
    if (!file)
      throw Error(cat("kernel '", kernel, "': its object code is unreadable: ", message(file.takeError())));
    llvm::orc::SymbolMap symbols;
    for (const llvm::object::SymbolRef& symbol : (*file)->symbols()) {
      llvm::Expected<uint32_t> flags = symbol.getFlags();
      llvm::Expected<llvm::StringRef> name = symbol.getName();
      if (!flags || !name) {
        llvm::consumeError(flags.takeError());
        llvm::consumeError(name.takeError());
        continue;
      }
      if (!(*flags & llvm::object::SymbolRef::SF_Undefined) ||
          !ExternCRegistry::global().contains(name->str()))
        continue;
      symbols[jit_->mangleAndIntern(*name)] = llvm::orc::ExecutorSymbolDef(
          llvm::orc::ExecutorAddr::fromPtr(ExternCRegistry::global().get(name->str()).address),
          llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
    }
    if (symbols.empty()) return;
    if (llvm::Error e = jd.define(llvm::orc::absoluteSymbols(std::move(symbols))))
      throw Error(cat("kernel '", kernel, "': cannot bind its extern C functions: ", message(std::move(e))));
  }

  OrcJit() {
    codegen::initialize_llvm();
    // Linking runs on the calling thread (ORC's default would hand it to a thread pool): build()
    // already runs on the user's threads, and its errors reach the thread that asked.
    llvm::Expected<std::unique_ptr<llvm::orc::SelfExecutorProcessControl>> process =
        llvm::orc::SelfExecutorProcessControl::Create(nullptr,
                                                      std::make_unique<llvm::orc::InPlaceTaskDispatcher>());
    if (!process) throw Error(cat("cannot create the LLVM ORC JIT: ", message(process.takeError())));
    // No platform: kernels have no static initializers, and setting one up costs start-up time.
    llvm::Expected<std::unique_ptr<llvm::orc::LLJIT>> jit =
        llvm::orc::LLJITBuilder()
            .setExecutorProcessControl(std::move(*process))
            .setPlatformSetUp(llvm::orc::setUpInactivePlatform)
            .create();
    if (!jit) throw Error(cat("cannot create the LLVM ORC JIT: ", message(jit.takeError())));
    jit_ = std::move(*jit);
    // ORC reports materialization failures here (by default on stderr). Lookups run on the
    // calling thread, so the thread that links a kernel finds its own errors here.
    jit_->getExecutionSession().setErrorReporter([](llvm::Error e) {
      std::string& errors = session_errors();
      errors += (errors.empty() ? "" : "; ") + message(std::move(e));
    });
    llvm::orc::SymbolMap symbols;
    for (const RuntimeSymbol& s : runtime_symbols()) {
      symbols[jit_->mangleAndIntern(s.name)] =
          llvm::orc::ExecutorSymbolDef(llvm::orc::ExecutorAddr::fromPtr(s.address),
                                       llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
    }
    llvm::Expected<llvm::orc::JITDylib&> runtime = jit_->createJITDylib("loom.runtime");
    if (!runtime) throw Error(cat("cannot create the JIT's runtime library: ", message(runtime.takeError())));
    runtime_ = &*runtime;
    if (llvm::Error e = runtime_->define(llvm::orc::absoluteSymbols(std::move(symbols))))
      throw Error(cat("cannot define the JIT's runtime functions: ", message(std::move(e))));
  }

  static std::string message(llvm::Error e) { return llvm::toString(std::move(e)); }
  static std::string& session_errors() {
    static thread_local std::string errors;
    return errors;
  }

  std::unique_ptr<llvm::orc::LLJIT> jit_;
  llvm::orc::JITDylib* runtime_ = nullptr;
  std::atomic<uint64_t> counter_{0};
};

}  // namespace loom::runtime
