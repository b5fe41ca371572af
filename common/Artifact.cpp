//===- Artifact.cpp - reading .loom files ---------------------------------===//
//
// Checks everything in a file before the runtime trusts it: magic,
// version, the protobuf, dtypes, ranks, weight sizes against their dims.
//
//===----------------------------------------------------------------------===//

#include "loom/common/Artifact.h"
#include "loom/common/DType.h"
#include "loom/common/FileIO.h"
#include "loom/common/Schedule.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

namespace loom::artifact {

size_t dtypeSize(int dtype) { return dtypes::sizeOf(dtype); }

/// The largest rank a signature may have.
static constexpr int kMaxRank = 16;

static bool checkSignature(const TensorSignature &sig, const char *what,
                           int index, std::string &error) {
  std::string where = std::string(what) + " " + std::to_string(index) + " ('" +
                      sig.name() + "')";
  if (dtypeSize(sig.dtype()) == 0) {
    error = where + " has an unknown dtype " + std::to_string(sig.dtype());
    return false;
  }
  if (sig.dims_size() > kMaxRank) {
    error = where + " has rank " + std::to_string(sig.dims_size()) +
            ", more than " + std::to_string(kMaxRank);
    return false;
  }
  for (const Dim &d : sig.dims()) {
    if (d.size() < -1) {
      error = where + " has a negative dim " + std::to_string(d.size());
      return false;
    }
  }
  return true;
}

const char *dtypeName(int dtype) { return dtypes::nameOf(dtype); }

std::string typeString(int dtype, const int64_t *dims, size_t rank) {
  std::string s = std::string(dtypeName(dtype)) + "[";
  for (size_t i = 0; i < rank; ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

bool tensorBytes(int dtype, const int64_t *dims, size_t rank, uint64_t maxBytes,
                 const std::string &where, uint64_t &bytes,
                 std::string &error) {
  size_t elemSize = dtypeSize(dtype);
  if (elemSize == 0) {
    error = where + " has an unknown dtype " + std::to_string(dtype);
    return false;
  }
  if (rank > static_cast<size_t>(kMaxRank)) {
    error = where + " has " + std::to_string(rank) + " dims, more than " +
            std::to_string(kMaxRank);
    return false;
  }
  for (size_t i = 0; i < rank; ++i)
    if (dims[i] < 0) {
      error = where + " has a negative dim " + std::to_string(dims[i]);
      return false;
    }
  // Overflow-safe: the size only grows while it stays within maxBytes.
  uint64_t size = elemSize;
  bool zero = false;
  for (size_t i = 0; i < rank; ++i)
    zero |= dims[i] == 0;
  for (size_t i = 0; i < rank && !zero; ++i) {
    uint64_t d = static_cast<uint64_t>(dims[i]);
    if (size > maxBytes / d) {
      error = where + " is " + typeString(dtype, dims, rank) +
              ", more than the limit of " + std::to_string(maxBytes) +
              " bytes per tensor";
      return false;
    }
    size *= d;
  }
  bytes = zero ? 0 : size;
  if (bytes > maxBytes) {
    error = where + " is " + typeString(dtype, dims, rank) +
            ", more than the limit of " + std::to_string(maxBytes) +
            " bytes per tensor";
    return false;
  }
  return true;
}

bool checkTensorData(int dtype, const int64_t *dims, size_t rank, size_t bytes,
                     const std::string &where, std::string &error,
                     uint64_t maxBytes) {
  uint64_t need = 0;
  if (!tensorBytes(dtype, dims, rank, maxBytes, where, need, error))
    return false;
  if (need != bytes) {
    error = where + " holds " + std::to_string(bytes) +
            " bytes, its dims need " + std::to_string(need);
    return false;
  }
  return true;
}

/// The static dims of `sig`, or false when one is dynamic.
static bool staticDims(const TensorSignature &sig, std::vector<int64_t> &dims) {
  dims.clear();
  for (const Dim &d : sig.dims()) {
    if (d.size() < 0)
      return false;
    dims.push_back(d.size());
  }
  return true;
}

/// A training artifact's Training message against its signature: every
/// index in range and used once, the scalars' types, each state's input
/// and output of one static type, initial values of the right size.
static bool checkTraining(const Artifact &a, const DataSection &section,
                          const Limits &limits, std::string &error) {
  const Training &t = a.training();
  error = "training: ";
  if (t.accumulate() < 1) {
    error += "accumulate is " + std::to_string(t.accumulate()) +
             ", it must be at least 1";
    return false;
  }
  if (t.total_steps() < 0) {
    error += "total_steps is negative";
    return false;
  }
  std::vector<int> inputUse(a.inputs_size(), 0), outputUse(a.outputs_size(), 0);
  // An input (or output) `index` that must exist, be unused so far, and
  // when `dtype` is set be a scalar of that dtype.
  auto use = [&](bool input, int64_t index, const std::string &what,
                 int dtype) {
    int count = input ? a.inputs_size() : a.outputs_size();
    if (index < 0 || index >= count) {
      error += what + " is " + (input ? "input " : "output ") +
               std::to_string(index) + ", out of range (" +
               std::to_string(count) + ")";
      return false;
    }
    if ((input ? inputUse : outputUse)[index]++) {
      error += what + " uses " + (input ? "input " : "output ") +
               std::to_string(index) + ", which another role uses too";
      return false;
    }
    const TensorSignature &sig = input ? a.inputs(index) : a.outputs(index);
    if (dtype != DTYPE_UNDEFINED &&
        (sig.dtype() != dtype || sig.dims_size() != 0)) {
      error += what + " ('" + sig.name() + "') is " + dtypeName(sig.dtype()) +
               " of rank " + std::to_string(sig.dims_size()) + ", not a " +
               dtypeName(dtype) + " scalar";
      return false;
    }
    return true;
  };
  if (a.has_pipeline()) {
    // The step is in the stages and updates: no state and no step input
    // here, one micro-batch per step (the pipeline's m are inside it).
    if (t.accumulate() != 1 || t.state_size() != 0) {
      error += "a pipeline artifact's training has accumulate 1 and no "
               "state (it has accumulate " +
               std::to_string(t.accumulate()) + " and " +
               std::to_string(t.state_size()) + " state tensor(s))";
      return false;
    }
  } else if (!use(true, t.step_input(), "the step counter", I64) ||
             (t.total_steps_input() != -1 &&
              !use(true, t.total_steps_input(), "the schedule horizon", I64)) ||
             !use(false, t.loss_output(), "the loss", F32) ||
             !use(false, t.grad_norm_output(), "the gradient norm", F32) ||
             !use(false, t.lr_output(), "the learning rate", F32) ||
             (t.has_loss_scale_output() &&
              !use(false, t.loss_scale_output(), "the loss scale", F32))) {
    return false;
  }
  std::vector<std::string> names;
  for (const TrainingState &s : t.state()) {
    std::string what = "state '" + s.name() + "'";
    if (s.name().empty() || s.kind().empty()) {
      error += "a state has no name or no kind";
      return false;
    }
    if (std::find(names.begin(), names.end(), s.name()) != names.end()) {
      error += what + " appears twice";
      return false;
    }
    names.push_back(s.name());
    if (!use(true, s.input(), what, DTYPE_UNDEFINED))
      return false;
    if (t.state_in_place() != (s.output() < 0)) {
      error += what + (t.state_in_place()
                           ? " has a next value output, but the state is "
                             "updated in place"
                           : " has no next value output");
      return false;
    }
    if (!t.state_in_place() &&
        !use(false, s.output(), what + "'s next value", DTYPE_UNDEFINED))
      return false;
    const TensorSignature &in = a.inputs(s.input());
    const TensorSignature *out =
        t.state_in_place() ? nullptr : &a.outputs(s.output());
    std::vector<int64_t> dims, outDims;
    if (!staticDims(in, dims)) {
      error += what + " has a dynamic shape";
      return false;
    }
    if (out && (in.dtype() != out->dtype() || !staticDims(*out, outDims) ||
                dims != outDims)) {
      error += what + " is " +
               typeString(in.dtype(), dims.data(), dims.size()) +
               " but its next value (output " + std::to_string(s.output()) +
               ") is another type";
      return false;
    }
    // A tensor-parallel piece: the whole tensor's dims but for one, which
    // divides into the pieces; its initial value is the whole tensor.
    std::vector<int64_t> initialDims = dims;
    if (s.has_shard() && s.shard().has_dim()) {
      const StateShard &sh = s.shard();
      size_t d = static_cast<size_t>(sh.dim());
      bool ok = sh.dim() >= 0 && d < dims.size() &&
                sh.full_dims_size() == static_cast<int>(dims.size()) &&
                sh.groups() >= 1;
      for (size_t i = 0; ok && i < dims.size(); ++i)
        ok = i == d ? dims[i] > 0 &&
                          sh.full_dims(static_cast<int>(i)) % dims[i] == 0
                    : sh.full_dims(static_cast<int>(i)) == dims[i];
      if (ok) { // full % (groups * count), without overflow
        int64_t full = sh.full_dims(sh.dim()), count = full / dims[d];
        ok = full % sh.groups() == 0 && (full / sh.groups()) % count == 0;
      }
      if (!ok) {
        error += what + " is " +
                 typeString(in.dtype(), dims.data(), dims.size()) +
                 ", not a piece of its split (dim " + std::to_string(sh.dim()) +
                 ", " + std::to_string(sh.groups()) + " group(s)) of " +
                 typeString(in.dtype(), sh.full_dims().data(),
                            static_cast<size_t>(sh.full_dims_size()));
        return false;
      }
      initialDims.assign(sh.full_dims().begin(), sh.full_dims().end());
    } else if (s.has_shard() && s.kind() == "param" &&
               (s.has_initial_segment() || s.initial().size() > 0)) {
      // ZeRO-3: a parameter's flat chunk; its initial value is whole.
      initialDims.assign(s.shard().full_dims().begin(),
                         s.shard().full_dims().end());
    }
    // Zero-filled when it has no initial value: its size is checked
    // against the limit either way (a piece's initial value is whole).
    uint64_t bytes = 0;
    std::string initial = "training: " + what + "'s initial value";
    if (!tensorBytes(in.dtype(), initialDims.data(), initialDims.size(),
                     limits.maxTensorBytes, "training: " + what, bytes, error))
      return false;
    std::string_view data;
    if (!locateTensor(section, s.initial(),
                      s.has_initial_segment() ? &s.initial_segment() : nullptr,
                      initial, data, error))
      return false;
    if (!data.empty() &&
        !checkTensorData(in.dtype(), initialDims.data(), initialDims.size(),
                         data.size(), initial, error))
      return false;
  }
  if (!t.labels().empty()) {
    bool found = false;
    for (int i = 0; i < a.inputs_size(); ++i)
      found |= !inputUse[i] && a.inputs(i).name() == t.labels();
    if (!found) {
      error += "the labels '" + t.labels() + "' are not a batch input";
      return false;
    }
  }
  error.clear();
  return true;
}

/// The mesh: at least one axis, each of size >= 1 and a known name ("data",
/// "tensor", "pipe"), at most 65536 ranks, ZeRO stage 0 to 3.
static bool checkMesh(const Mesh &m, std::string &error) {
  error = "mesh: ";
  if (m.shape_size() == 0 || m.shape_size() != m.axes_size()) {
    error += "it has " + std::to_string(m.shape_size()) + " sizes and " +
             std::to_string(m.axes_size()) + " axis names";
    return false;
  }
  int64_t ranks = 1;
  for (int i = 0; i < m.shape_size(); ++i) {
    if (m.shape(i) < 1 || m.shape(i) > 65536 || (ranks *= m.shape(i)) > 65536) {
      error += "axis " + std::to_string(i) + " has size " +
               std::to_string(m.shape(i)) + " (at most 65536 ranks in all)";
      return false;
    }
    if (m.axes(i) != "data" && m.axes(i) != "tensor" && m.axes(i) != "pipe") {
      error += "axis " + std::to_string(i) + " is named '" + m.axes(i) +
               "', not 'data', 'tensor' or 'pipe'";
      return false;
    }
  }
  if (m.zero_stage() < 0 || m.zero_stage() > 3) {
    error +=
        "ZeRO stage " + std::to_string(m.zero_stage()) + " is not 0, 1, 2 or 3";
    return false;
  }
  error.clear();
  return true;
}

/// A pipeline artifact's Pipeline (docs/pipeline.md): the counts at least
/// 1, S * v stages, one update per pipe rank, a known schedule and loss, the
/// mesh [D, S] over ("data", "pipe") (with T tensor ranks per stage
/// [D, T, S] over ("data", "tensor", "pipe")) when there is more than one
/// rank, and training but no code of its own. The parts themselves are
/// checked when a trainer loads them (each is a whole .loom file).
static bool checkPipeline(const Artifact &a, std::string &error) {
  const Pipeline &p = a.pipeline();
  error = "pipeline: ";
  auto atLeastOne = [&](int64_t v, const char *what) {
    if (v >= 1)
      return true;
    error += std::string(what) + " is " + std::to_string(v) +
             ", it must be at least 1";
    return false;
  };
  if (!atLeastOne(p.ranks(), "ranks") ||
      !atLeastOne(p.virtual_stages(), "virtual_stages") ||
      !atLeastOne(p.micro_batches(), "micro_batches") ||
      !atLeastOne(p.data_parallel(), "data_parallel"))
    return false;
  int64_t stages = int64_t(p.ranks()) * p.virtual_stages();
  if (p.stages_size() != stages) {
    error += "it has " + std::to_string(p.stages_size()) + " stages, not " +
             std::to_string(p.ranks()) + " ranks x " +
             std::to_string(p.virtual_stages()) + " virtual stages";
    return false;
  }
  if (p.updates_size() != p.ranks()) {
    error += "it has " + std::to_string(p.updates_size()) +
             " update artifacts, not one per rank (" +
             std::to_string(p.ranks()) + ")";
    return false;
  }
  const auto &names = loom::pipeline::scheduleNames();
  if (std::find(names.begin(), names.end(), p.schedule()) == names.end()) {
    error += "unknown schedule '" + p.schedule() + "' (known:";
    for (const std::string &n : names)
      error += " " + n;
    error += ")";
    return false;
  }
  if (p.loss() != "cross_entropy" && p.loss() != "mse") {
    error += "unknown loss '" + p.loss() + "' (cross_entropy or mse)";
    return false;
  }
  if (p.memory_budget() < 0) {
    error += "the memory budget is negative";
    return false;
  }
  for (int s = 0; s < p.stages_size(); ++s) {
    const PipelineStage &st = p.stages(s);
    if (st.forward().empty() ||
        (st.backward_input().empty() && st.backward_weight().empty()) ||
        st.saved_bytes() < 0) {
      error += "stage " + std::to_string(s) +
               " has no forward, no backward part, or negative saved_bytes";
      return false;
    }
  }
  if (p.tensor_parallel() < 0) {
    error += "tensor_parallel is " + std::to_string(p.tensor_parallel()) +
             ", it must be 0 or more";
    return false;
  }
  // [D, S] over (data, pipe); with tensor parallelism inside the stages
  // [D, T, S] over (data, tensor, pipe), so that a stage's T ranks read
  // the same rows and each sends to the same tensor rank of the next.
  const Mesh &m = a.mesh();
  int64_t tensor = std::max(1, p.tensor_parallel());
  int64_t ranks = int64_t(p.ranks()) * p.data_parallel() * tensor;
  bool meshOk =
      tensor == 1
          ? m.shape_size() == 2 && m.axes_size() == 2 &&
                m.shape(0) == p.data_parallel() && m.shape(1) == p.ranks() &&
                m.axes(0) == "data" && m.axes(1) == "pipe"
          : m.shape_size() == 3 && m.axes_size() == 3 &&
                m.shape(0) == p.data_parallel() && m.shape(1) == tensor &&
                m.shape(2) == p.ranks() && m.axes(0) == "data" &&
                m.axes(1) == "tensor" && m.axes(2) == "pipe";
  if (ranks > 1 && !meshOk) {
    error += tensor == 1
                 ? "the mesh must be [" + std::to_string(p.data_parallel()) +
                       ", " + std::to_string(p.ranks()) + "] over (data, pipe)"
                 : "the mesh must be [" + std::to_string(p.data_parallel()) +
                       ", " + std::to_string(tensor) + ", " +
                       std::to_string(p.ranks()) +
                       "] over (data, tensor, pipe)";
    return false;
  }
  if (!a.has_training()) {
    error += "the artifact has no training message (a pipeline artifact "
             "trains)";
    return false;
  }
  if (!a.cpu().shared_object().empty() || a.has_cuda()) {
    error += "a pipeline artifact has no code of its own (its stages have)";
    return false;
  }
  error.clear();
  return true;
}

/// A tensor's bytes: its segment's in `section`, else `inlineData`.
static std::string_view bytesOf(const DataSection &section,
                                const std::string &inlineData,
                                const Segment *segment) {
  if (!segment)
    return inlineData;
  return {section.data + segment->offset(), segment->size()};
}

std::string_view weightData(const DataSection &section, const Weight &w) {
  return bytesOf(section, w.data(), w.has_segment() ? &w.segment() : nullptr);
}

std::string_view initialData(const DataSection &section,
                             const TrainingState &s) {
  return bytesOf(section, s.initial(),
                 s.has_initial_segment() ? &s.initial_segment() : nullptr);
}

std::string_view tensorData(const DataSection &section,
                            const CheckpointTensor &t) {
  return bytesOf(section, t.data(), t.has_segment() ? &t.segment() : nullptr);
}

bool locateTensor(const DataSection &section, const std::string &inlineData,
                  const Segment *segment, const std::string &where,
                  std::string_view &bytes, std::string &error) {
  if (!segment) {
    bytes = inlineData;
    return true;
  }
  if (!inlineData.empty()) {
    error = where + " is both inline and in a segment";
    return false;
  }
  uint64_t offset = segment->offset(), size = segment->size();
  if (offset % kSegmentAlign != 0) {
    error = where + " is corrupt (its segment's offset " +
            std::to_string(offset) + " is not a multiple of " +
            std::to_string(kSegmentAlign) + ")";
    return false;
  }
  if (offset > section.size || size > section.size - offset) {
    error = where + " lies past the end of the file (bytes " +
            std::to_string(offset) + " to " + std::to_string(offset + size) +
            " of a data section of " + std::to_string(section.size) +
            "): the file is truncated";
    return false;
  }
  if (segmentChecksum(section.data + offset, size) != segment->checksum()) {
    error = where + " is corrupt (checksum mismatch)";
    return false;
  }
  bytes = bytesOf(section, inlineData, segment);
  return true;
}

void FileWriter::add(std::string_view bytes, Segment &segment) {
  if (bytes.empty())
    return;
  segment.set_offset(next_);
  segment.set_size(bytes.size());
  segment.set_checksum(segmentChecksum(bytes.data(), bytes.size()));
  segments_.push_back(bytes);
  next_ += (bytes.size() + kSegmentAlign - 1) / kSegmentAlign * kSegmentAlign;
}

void FileWriter::add(std::string &&bytes, Segment &segment) {
  if (bytes.empty())
    return;
  owned_.push_back(std::move(bytes));
  add(std::string_view(owned_.back()), segment);
}

static const char kZeros[kSegmentAlign] = {};

bool FileWriter::pieces(const google::protobuf::MessageLite &message,
                        const FileKind &kind, std::string &head,
                        std::vector<std::string_view> &out,
                        std::string &error) {
  std::string body;
  if (!message.SerializeToString(&body) ||
      body.size() > Limits::kMaxMessageBytes) {
    error = std::string("serializing the ") + kind.noun +
            "'s message failed (over 2 GiB without its tensor data?)";
    return false;
  }
  head = header(body, kind) + body;
  head.resize(dataSectionOffset(body.size()), '\0');
  out.clear();
  out.push_back(head);
  // Each segment starts at a multiple of kSegmentAlign; the file ends
  // where the last one does.
  for (size_t i = 0; i < segments_.size(); ++i) {
    std::string_view s = segments_[i];
    out.push_back(s);
    size_t pad = (kSegmentAlign - s.size() % kSegmentAlign) % kSegmentAlign;
    if (pad && i + 1 < segments_.size())
      out.emplace_back(kZeros, pad);
  }
  return true;
}

bool FileWriter::assemble(const google::protobuf::MessageLite &message,
                          const FileKind &kind, std::string &out,
                          std::string &error) {
  std::vector<std::string_view> parts;
  std::string head;
  if (!pieces(message, kind, head, parts, error))
    return false;
  out = std::move(head);
  out.reserve(out.size() + next_);
  for (size_t i = 1; i < parts.size(); ++i) {
    out.append(parts[i]);
    // Free what the writer owns as soon as it is copied.
    if (!owned_.empty() && parts[i].data() == owned_.front().data()) {
      owned_.pop_front();
    }
  }
  segments_.clear();
  owned_.clear();
  next_ = 0;
  return true;
}

bool FileWriter::write(const google::protobuf::MessageLite &message,
                       const FileKind &kind, const std::string &path,
                       std::string &error) {
  std::vector<std::string_view> parts;
  std::string head;
  if (!pieces(message, kind, head, parts, error))
    return false;
  bool ok = files::writeFileAtomically(path, parts, error);
  segments_.clear();
  owned_.clear();
  next_ = 0;
  return ok;
}

void moveToSegments(Artifact &a, FileWriter &writer) {
  for (Weight &w : *a.mutable_weights()) {
    if (!w.data().empty())
      writer.add(std::move(*w.mutable_data()), *w.mutable_segment());
    w.clear_data();
  }
  if (!a.has_training()) // mutable_training() would make one
    return;
  for (TrainingState &s : *a.mutable_training()->mutable_state()) {
    if (!s.initial().empty())
      writer.add(std::move(*s.mutable_initial()), *s.mutable_initial_segment());
    s.clear_initial();
  }
}

bool serialize(Artifact &a, std::string &bytes, std::string &error) {
  FileWriter writer;
  moveToSegments(a, writer);
  return writer.assemble(a, kArtifactFile, bytes, error);
}

bool parse(const void *data, size_t size, Artifact &out, std::string &error,
           const Limits &limits, DataSection *sectionOut) {
  FileParts parts;
  if (!checkFile(data, size, kArtifactFile, parts, error, limits.maxFileBytes))
    return false;
  DataSection section{parts.data, parts.dataSize};
  if (sectionOut)
    *sectionOut = section;
  const char *body = parts.body;
  size_t bodySize = parts.bodySize;
  if (!out.ParseFromArray(body, static_cast<int>(bodySize))) {
    error = "artifact is truncated or corrupt (its message does not parse)";
    return false;
  }
  if (out.outputs_size() == 0 && !out.has_pipeline()) {
    error = "artifact has no outputs";
    return false;
  }
  for (int i = 0; i < out.inputs_size(); ++i)
    if (!checkSignature(out.inputs(i), "input", i, error))
      return false;
  for (int i = 0; i < out.outputs_size(); ++i)
    if (!checkSignature(out.outputs(i), "output", i, error))
      return false;
  for (int i = 0; i < out.weights_size(); ++i) {
    const Weight &w = out.weights(i);
    std::string where = "weight " + std::to_string(i) + " ('" + w.name() + "')";
    if (!checkStoredTensor(section, w, where, limits.maxTensorBytes, error))
      return false;
  }
  if (out.has_training() && !checkTraining(out, section, limits, error))
    return false;
  if (out.has_mesh() && !checkMesh(out.mesh(), error))
    return false;
  if (out.has_pipeline())
    return checkPipeline(out, error);
  // The CPU code or the CUDA program (checked by the CUDA device when it
  // loads it: cuda::validateProgram).
  bool cpu =
      !out.cpu().shared_object().empty() && !out.cpu().entry_symbol().empty();
  if (!cpu && !out.has_cuda()) {
    error = "artifact has no code (neither CPU code nor a CUDA program)";
    return false;
  }
  return true;
}

} // namespace loom::artifact
