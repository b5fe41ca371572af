//===- Calibration.h - an ONNX model run on calibration data ----*- C++ -*-===//
//
// `loomc quantize --mode static`: the ranges of the activations that the
// quantized products read, from running the f32 model on a calibration
// set, and the SQNR the quantized model leaves on the same data. loomc has
// no runtime, so the models run in `loom-run` (found beside loomc): each
// is compiled here with the observed tensors as its outputs, once per
// batch size, and run batch by batch; loom-run writes the tensors as .npy
// files, read back with the common tensor readers. Everything goes in a
// temporary folder that is removed.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_COMPILER_CALIBRATION_H
#define LOOM_COMPILER_CALIBRATION_H

#include "loom/common/TensorFiles.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace onnx {
class ModelProto;
} // namespace onnx

namespace loom::calibration {

/// Samples of a calibration batch when the model's batch dim is dynamic.
constexpr int64_t kBatchSamples = 32;
/// Bins of the percentile and entropy methods' histograms.
constexpr int kHistogramBins = 2048;
/// The entropy method's quantized levels: the 8-bit grid's 128 per side
/// of zero, as TensorRT and ONNX Runtime take them.
constexpr int kEntropyQuantizedBins = 128;

struct CalibrationOptions {
  /// The .npz: one array per graph input, the samples along its first dim.
  std::string data;
  /// "minmax", "percentile" or "entropy".
  std::string method = "minmax";
  /// The percentile method's share of the values kept, in percent: as
  /// much is cut off both ends together.
  double percentile = 99.999;
  /// The loom-run that runs the models.
  std::string loomRun;
  /// The folder the model's external data is relative to.
  std::string modelDir = ".";
};

/// The calibration data, split into the batches the model takes, and the
/// models compiled for them.
class Runner {
public:
  /// Reads the data and checks it against `model`'s graph inputs: an
  /// array per input, of its dtype, its dims after the samples'. When
  /// every input's dim 0 is dynamic and every array has the input's rank,
  /// the samples run in batches of kBatchSamples along dim 0; otherwise
  /// one sample (an array's first index) at a time.
  static llvm::Expected<std::unique_ptr<Runner>>
  create(const CalibrationOptions &options, const onnx::ModelProto &model);
  ~Runner();

  /// For each batch, runs each of `models` (graphs with the inputs of the
  /// calibrated model) and calls `visit` with the values of its f32
  /// `tensors`: values[model][tensor], the batch's samples together.
  llvm::Error run(mlir::MLIRContext &ctx,
                  llvm::ArrayRef<const onnx::ModelProto *> models,
                  llvm::ArrayRef<std::vector<std::string>> tensors,
                  llvm::function_ref<llvm::Error(
                      std::vector<std::vector<files::HostTensor>> &values)>
                      visit);

  int64_t samples() const { return samples_; }
  /// loom-run calls so far.
  int runs() const { return runs_; }

private:
  Runner() = default;
  struct Input {
    std::string name;
    /// The array, mapped (read as the batches need it).
    files::MappedTensor data;
    /// Whether the array's dim 0 is the samples (else one sample, whole).
    bool sampled = true;
  };
  /// The batches' inputs' shapes for `count` samples.
  std::vector<std::vector<int64_t>> shapes(int64_t count) const;

  CalibrationOptions options_;
  std::vector<Input> inputs_;
  bool batched_ = false;
  int64_t samples_ = 0;
  int runs_ = 0;
  std::string dir_;
  /// The artifacts compiled so far, kept across passes: by a fingerprint
  /// of the observing model (its bytes) and the batch size, the
  /// artifact's path and its outputs' names.
  std::map<std::pair<uint64_t, int64_t>,
           std::pair<std::string, std::vector<std::string>>>
      compiled_;
};

/// The entropy method's range for a histogram of `counts` (an even number
/// of bins) over [-threshold, threshold] of values whose extremes are
/// `lo` and `hi`: ONNX Runtime's `HistogramCollector.get_entropy_threshold`
/// (TensorRT's KL calibration). For each window of bins [zero - i, zero +
/// i] around the bin that starts at 0, i from quantizedBins / 2 up, the
/// window's counts with the counts outside it added to its end bins (P)
/// are merged into quantizedBins levels and spread back over the nonzero
/// bins of each level (Q); the window whose KL(P || Q), both smoothed, is
/// least gives the range, its edges clamped to [lo, hi].
std::pair<float, float> entropyRange(llvm::ArrayRef<double> counts,
                                     double threshold, double lo, double hi,
                                     int quantizedBins);

/// The [min, max] of each of `tensors` of `model` over the data, as the
/// method finds it (minmax: the extremes; percentile: the histogram's
/// values between the cut-off tails; entropy: entropyRange of a histogram
/// of kHistogramBins over [-max |x|, max |x|], which takes two passes over
/// the data, the first for the extremes).
llvm::Error calibrate(mlir::MLIRContext &ctx, Runner &runner,
                      const CalibrationOptions &options,
                      const onnx::ModelProto &model,
                      const std::vector<std::string> &tensors,
                      std::map<std::string, std::pair<float, float>> &ranges);

/// The SQNR (dB) of each of `tensors` in `quantized` against the same
/// tensor in `original`, over all the data: +inf where they are equal.
llvm::Error measureSqnr(mlir::MLIRContext &ctx, Runner &runner,
                        const onnx::ModelProto &original,
                        const onnx::ModelProto &quantized,
                        const std::vector<std::string> &tensors,
                        std::map<std::string, double> &sqnr);

} // namespace loom::calibration

#endif // LOOM_COMPILER_CALIBRATION_H
