//===- Checkpoint.cpp - reading and writing .loomckpt files ---------------===//

#include "loom/common/Checkpoint.h"

#include "loom/common/FileIO.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>

namespace loom::artifact {

bool serializeCheckpoint(const Checkpoint &checkpoint, std::string &bytes,
                         std::string &error) {
  std::string body;
  if (!checkpoint.SerializeToString(&body)) {
    error = "serializing the checkpoint failed (over 2 GiB?)";
    return false;
  }
  bytes = header(body, kCheckpointFile) + body;
  return true;
}

bool parseCheckpoint(const void *data, size_t size, Checkpoint &out,
                     std::string &error, const Limits &limits,
                     DataSection *sectionOut) {
  FileParts parts;
  if (!checkFile(data, size, kCheckpointFile, parts, error,
                 limits.maxFileBytes))
    return false;
  DataSection section{parts.data, parts.dataSize};
  if (sectionOut)
    *sectionOut = section;
  if (!out.ParseFromArray(parts.body, static_cast<int>(parts.bodySize))) {
    error = "checkpoint is truncated or corrupt (its message does not parse)";
    return false;
  }
  if (out.micro_step() < 0 || out.total_steps() < 0 || out.accumulate() < 1) {
    error = "checkpoint is corrupt (micro_step " +
            std::to_string(out.micro_step()) + ", total_steps " +
            std::to_string(out.total_steps()) + ", accumulate " +
            std::to_string(out.accumulate()) + ")";
    return false;
  }
  std::map<std::string, int> seen;
  for (int i = 0; i < out.state_size(); ++i) {
    const CheckpointTensor &t = out.state(i);
    std::string where = "checkpoint state '" + t.name() + "'";
    if (t.name().empty()) {
      error = "checkpoint state " + std::to_string(i) + " has no name";
      return false;
    }
    if (!seen.emplace(t.name(), i).second) {
      error = where + " appears twice";
      return false;
    }
    if (!checkStoredTensor(section, t, where, limits.maxTensorBytes, error))
      return false;
  }
  return true;
}

bool readCheckpointFile(const std::string &path, Checkpoint &out,
                        std::string &error, const Limits &limits) {
  files::MappedFile file;
  if (!file.open(path, error, "checkpoint"))
    return false;
  DataSection section;
  if (!parseCheckpoint(file.data(), file.size(), out, error, limits,
                       &section)) {
    error = path + ": " + error;
    return false;
  }
  // Inline, so that the message outlives the mapping; each tensor's pages
  // are dropped once copied (the copy is the one the reader keeps).
  for (CheckpointTensor &t : *out.mutable_state()) {
    if (!t.has_segment())
      continue;
    std::string_view bytes = tensorData(section, t);
    t.set_data(bytes.data(), bytes.size());
    file.release(static_cast<uint64_t>(bytes.data() - file.data()),
                 bytes.size());
    t.clear_segment();
  }
  return true;
}

namespace {

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

} // namespace

std::string shardFileName(int64_t microStep, int64_t rank, int64_t ranks) {
  return "step" + std::to_string(microStep) + ".rank" + std::to_string(rank) +
         "-of-" + std::to_string(ranks) + ".loomckpt";
}

bool SplitLayout::valid() const {
  if (dim < 0 || static_cast<size_t>(dim) >= full.size() || groups < 1 ||
      count < 1 || elemBytes == 0)
    return false;
  for (int64_t d : full)
    if (d < 0)
      return false;
  // n % (groups * count) == 0, without overflow.
  int64_t n = full[static_cast<size_t>(dim)];
  return n % groups == 0 && (n / groups) % count == 0;
}

size_t SplitLayout::wholeBytes() const {
  size_t n = elemBytes;
  for (int64_t d : full)
    n *= static_cast<size_t>(d);
  return n;
}

size_t SplitLayout::pieceBytes() const {
  return wholeBytes() / static_cast<size_t>(count);
}

namespace {
/// Calls `copy(wholeOffset, pieceOffset, bytes)` for each contiguous run
/// of piece `index` of `l`.
template <typename Copy>
void forEachRun(const SplitLayout &l, int64_t index, Copy copy) {
  size_t outer = 1, inner = l.elemBytes;
  for (int d = 0; d < l.dim; ++d)
    outer *= static_cast<size_t>(l.full[static_cast<size_t>(d)]);
  for (size_t d = static_cast<size_t>(l.dim) + 1; d < l.full.size(); ++d)
    inner *= static_cast<size_t>(l.full[d]);
  size_t n = static_cast<size_t>(l.full[static_cast<size_t>(l.dim)]);
  size_t block = n / static_cast<size_t>(l.groups);
  size_t part = block / static_cast<size_t>(l.count);
  size_t local = n / static_cast<size_t>(l.count);
  for (size_t o = 0; o < outer; ++o)
    for (size_t g = 0; g < static_cast<size_t>(l.groups); ++g)
      copy((o * n + g * block + static_cast<size_t>(index) * part) * inner,
           (o * local + g * part) * inner, part * inner);
}
} // namespace

void SplitLayout::cut(const char *whole, int64_t index, char *piece) const {
  forEachRun(*this, index, [&](size_t w, size_t p, size_t bytes) {
    std::memcpy(piece + p, whole + w, bytes);
  });
}

void SplitLayout::place(const char *piece, int64_t index, char *whole) const {
  forEachRun(*this, index, [&](size_t w, size_t p, size_t bytes) {
    std::memcpy(whole + w, piece + p, bytes);
  });
}

bool mergeShards(Checkpoint &manifest, const std::vector<Checkpoint> &files,
                 const std::string &where, std::string &error,
                 const Limits &limits) {
  struct Pieces {
    const CheckpointTensor *first = nullptr;
    std::vector<const CheckpointTensor *> chunks;
  };
  std::map<std::string, Pieces> sharded;
  std::vector<std::string> order;
  std::map<std::string, const CheckpointTensor *> whole;
  for (const Checkpoint &file : files)
    for (const CheckpointTensor &t : file.state()) {
      std::string what = where + ": state '" + t.name() + "'";
      if (!t.has_shard()) {
        if (!whole.emplace(t.name(), &t).second || sharded.count(t.name())) {
          error = what + " is in two shard files";
          return false;
        }
        order.push_back(t.name());
        continue;
      }
      Pieces &p = sharded[t.name()];
      if (!p.first) {
        // One chunk per shard file: more shards than files cannot be
        // whole (and would size the list below from the file).
        if (whole.count(t.name()) || t.shard_count() < 1 ||
            static_cast<uint64_t>(t.shard_count()) > files.size()) {
          error = what + " is corrupt (shard count " +
                  std::to_string(t.shard_count()) + ")";
          return false;
        }
        p.first = &t;
        p.chunks.assign(static_cast<size_t>(t.shard_count()), nullptr);
        order.push_back(t.name());
      }
      bool split = t.shard().has_dim();
      if (t.shard_count() != p.first->shard_count() ||
          t.dtype() != p.first->dtype() ||
          split != p.first->shard().has_dim() ||
          (!split && (t.dims_size() != 1 || p.first->dims_size() != 1)) ||
          t.dims_size() != p.first->dims_size() ||
          !std::equal(t.dims().begin(), t.dims().end(),
                      p.first->dims().begin()) ||
          (split && (t.shard().dim() != p.first->shard().dim() ||
                     t.shard().groups() != p.first->shard().groups())) ||
          t.shard().full_dims_size() != p.first->shard().full_dims_size() ||
          t.shard_index() < 0 || t.shard_index() >= t.shard_count() ||
          p.chunks[static_cast<size_t>(t.shard_index())]) {
        error = what + ": shard " + std::to_string(t.shard_index()) +
                " does not match the others (count, type, size or index)";
        return false;
      }
      p.chunks[static_cast<size_t>(t.shard_index())] = &t;
    }
  for (const std::string &name : order) {
    CheckpointTensor *out = manifest.add_state();
    if (auto it = whole.find(name); it != whole.end()) {
      *out = *it->second;
      continue;
    }
    const Pieces &p = sharded[name];
    for (size_t i = 0; i < p.chunks.size(); ++i)
      if (!p.chunks[i]) {
        error = where + ": state '" + name + "' lacks shard " +
                std::to_string(i) + " of " + std::to_string(p.chunks.size());
        return false;
      }
    const auto &fullDims = p.first->shard().full_dims();
    uint64_t full = 0;
    if (!tensorBytes(p.first->dtype(), fullDims.data(),
                     static_cast<size_t>(fullDims.size()),
                     limits.maxTensorBytes, where + ": state '" + name + "'",
                     full, error))
      return false;
    if (p.first->shard().has_dim()) {
      // Tensor parallel: each piece goes back to its place along the dim.
      SplitLayout l;
      l.full.assign(fullDims.begin(), fullDims.end());
      l.dim = p.first->shard().dim();
      l.groups = p.first->shard().groups();
      l.count = static_cast<int64_t>(p.chunks.size());
      l.elemBytes = dtypeSize(p.first->dtype());
      if (!l.valid() || l.wholeBytes() != full ||
          l.pieceBytes() != p.first->data().size() ||
          static_cast<int>(l.full.size()) != p.first->dims_size()) {
        error = where + ": the pieces of state '" + name +
                "' do not make up its shape";
        return false;
      }
      std::string data(l.wholeBytes(), '\0');
      for (size_t i = 0; i < p.chunks.size(); ++i)
        l.place(p.chunks[i]->data().data(), static_cast<int64_t>(i),
                data.data());
      out->set_name(name);
      out->set_kind(p.first->kind());
      out->set_dtype(p.first->dtype());
      for (int64_t d : l.full)
        out->add_dims(d);
      out->set_data(std::move(data));
      continue;
    }
    std::string data;
    for (size_t i = 0; i < p.chunks.size(); ++i) {
      if (!p.chunks[i]) {
        error = where + ": state '" + name + "' lacks shard " +
                std::to_string(i) + " of " + std::to_string(p.chunks.size());
        return false;
      }
      data += p.chunks[i]->data();
    }
    if (data.size() < full) {
      error = where + ": the shards of state '" + name + "' hold " +
              std::to_string(data.size()) + " bytes, fewer than its shape";
      return false;
    }
    data.resize(full);
    out->set_name(name);
    out->set_kind(p.first->kind());
    out->set_dtype(p.first->dtype());
    for (int64_t d : p.first->shard().full_dims())
      out->add_dims(d);
    out->set_data(std::move(data));
  }
  manifest.clear_shard_files();
  return true;
}

bool readCheckpoint(const std::string &path, Checkpoint &out,
                    std::string &error, const Limits &limits) {
  std::string file = path;
  if (isDirectory(path))
    file = path + "/" + kManifestName;
  if (!readCheckpointFile(file, out, error, limits))
    return false;
  if (out.shard_files().empty())
    return true;
  std::string dir = file.substr(0, file.find_last_of('/') + 1);
  std::vector<Checkpoint> shards(static_cast<size_t>(out.shard_files_size()));
  for (int i = 0; i < out.shard_files_size(); ++i) {
    const std::string &name = out.shard_files(i);
    if (name.empty() || name.find('/') != std::string::npos) {
      error = file + ": shard file name '" + name + "' is not a plain name";
      return false;
    }
    if (!readCheckpointFile(dir + name, shards[static_cast<size_t>(i)], error,
                            limits))
      return false;
  }
  if (!out.state().empty()) {
    error = file + ": a manifest with state of its own";
    return false;
  }
  return mergeShards(out, shards, path, error, limits);
}

std::map<std::string, const CheckpointTensor *>
stateByName(const Checkpoint &checkpoint) {
  std::map<std::string, const CheckpointTensor *> state;
  for (const CheckpointTensor &t : checkpoint.state())
    state.emplace(t.name(), &t);
  return state;
}

} // namespace loom::artifact
