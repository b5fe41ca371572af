//===- RuntimeChecks.cpp - run-time checks as a status, not an abort ------===//
//
// Lowerings check values known only when the code runs (a Reshape shape
// given as an input, run-time axes) with cf.assert. Upstream lowers
// cf.assert to abort(), which would take down the process that embeds the
// runtime. This pass turns each into a call of the runtime's
// `loom_rt_fail(const char *message)` when the condition is false; the
// runtime records the first message of the run and returns it as the run's
// error status. The code goes on after a failed check with sizes the
// lowering clamped, so it stays in bounds until it returns.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cpu/CpuTransforms.h"
#include "loom/common/CodegenAbi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace loom::codegen {

#define GEN_PASS_DEF_CPURUNTIMECHECKSPASS
#include "compiler/codegen/cpu/Passes.h.inc"

namespace {

constexpr const char *kFailHook = abi::kRtFail;

struct CpuRuntimeChecksPass
    : impl::CpuRuntimeChecksPassBase<CpuRuntimeChecksPass> {

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<cf::AssertOp> asserts;
    module.walk([&](cf::AssertOp a) { asserts.push_back(a); });
    if (asserts.empty())
      return;
    MLIRContext *ctx = &getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    declareRuntimeFunction(module, kFailHook, FunctionType::get(ctx, {ptr}, {}),
                           false);
    // One global per distinct message, after the declarations.
    llvm::StringMap<LLVM::GlobalOp> globals;
    OpBuilder top(module.getBody(), module.getBody()->begin());
    for (cf::AssertOp a : asserts) {
      StringRef msg = a.getMsg();
      LLVM::GlobalOp &global = globals[msg];
      if (!global) {
        std::string text = msg.str();
        text.push_back('\0');
        auto type =
            LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), text.size());
        global = top.create<LLVM::GlobalOp>(
            a.getLoc(), type, /*isConstant=*/true, LLVM::Linkage::Internal,
            ("loom_check_" + Twine(globals.size() - 1)).str(),
            top.getStringAttr(text));
      }
      OpBuilder b(a);
      Location loc = a.getLoc();
      Value failed = b.create<arith::XOrIOp>(
          loc, a.getArg(), b.create<arith::ConstantIntOp>(loc, 1, 1));
      b.create<scf::IfOp>(loc, failed, [&](OpBuilder &tb, Location tl) {
        Value p = tb.create<LLVM::AddressOfOp>(tl, global);
        tb.create<func::CallOp>(tl, kFailHook, TypeRange{}, p);
        tb.create<scf::YieldOp>(tl);
      });
      a.erase();
    }
  }
};

} // namespace

} // namespace loom::codegen
