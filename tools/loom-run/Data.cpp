//===- Data.cpp - loom-run's training data, streamed ----------------------===//

#include "tools/loom-run/Data.h"

#include <cstring>
#include <map>

namespace loom::tools {

namespace {

std::string joined(const std::vector<std::string> &names) {
  std::string s;
  for (const std::string &n : names)
    s += (s.empty() ? "" : ", ") + n;
  return s;
}

/// "f32[batch, 4]"
std::string signatureText(const loom_tensor_info &info) {
  std::string s = std::string(loom_dtype_name(info.dtype)) + "[";
  for (size_t i = 0; i < info.rank; ++i) {
    s += i ? ", " : "";
    if (info.dims[i] >= 0)
      s += std::to_string(info.dims[i]);
    else
      s += info.dim_names[i][0] ? info.dim_names[i] : "?";
  }
  return s + "]";
}

/// "f32[8, 4]"
std::string tensorText(int32_t dtype, const std::vector<int64_t> &shape) {
  std::string s =
      std::string(loom_dtype_name(static_cast<loom_dtype>(dtype))) + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// SplitMix64: a well-mixed 64-bit value of `x`.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// The trainer's batch inputs.
std::vector<loom_tensor_info> batchInputs(loom_trainer *trainer,
                                          std::vector<std::string> &names) {
  size_t n = loom_trainer_batch_input_count(trainer);
  std::vector<loom_tensor_info> infos(n);
  for (size_t i = 0; i < n; ++i) {
    loom_status_free(loom_trainer_batch_input_info(trainer, i, &infos[i]));
    names.push_back(infos[i].name);
  }
  return infos;
}

/// The "--batch does not fit" message for an input of `dims0` samples.
std::string batchMismatch(int64_t batch, const loom_tensor_info &info,
                          const Distributed &dist) {
  std::string error = "--batch " + std::to_string(batch) +
                      " does not fit the model: its batch input '" + info.name +
                      "' takes exactly " + std::to_string(info.dims[0]) +
                      " samples (" + signatureText(info) + ")";
  if (dist.dataRanks > 1)
    error += " per data-parallel rank, and --batch is the global batch of "
             "the " +
             std::to_string(dist.dataRanks) + " (" + dist.mesh +
             "): give --batch " + std::to_string(info.dims[0] * dist.dataRanks);
  return error;
}

} // namespace

bool TrainData::open(loom_trainer *trainer, const DataOptions &o, int64_t local,
                     int64_t offset, const Distributed &dist,
                     std::string &error) {
  batch_ = o.batch;
  local_ = local;
  offset_ = offset;
  std::vector<std::string> names;
  std::vector<loom_tensor_info> infos = batchInputs(trainer, names);
  for (const loom_tensor_info &info : infos)
    if (info.rank > 0 && info.dims[0] >= 0 && info.dims[0] != local) {
      error = batchMismatch(o.batch, info, dist);
      return false;
    }
  if (!(o.tokens.empty() ? openArrays(infos, names, o, error)
                         : openTokens(trainer, infos, names, o, error)))
    return false;
  for (const Feed &f : feeds_) {
    inputs_.push_back(f.batch.get());
    if (f.name == loom_trainer_labels(trainer) &&
        loom_tensor_rank(f.batch.get()) >= 2)
      tokensPerBatch_ =
          static_cast<int64_t>(loom_tensor_element_count(f.batch.get())) /
          local * batch_;
  }
  return true;
}

bool TrainData::openArrays(const std::vector<loom_tensor_info> &infos,
                           const std::vector<std::string> &names,
                           const DataOptions &o, std::string &error) {
  std::string inputs = " (the model's batch inputs: " + joined(names) + ")";
  std::string file = "'" + o.path + "'";
  std::map<std::string, files::MappedTensor> byName;
  bool npy =
      o.path.size() >= 4 && o.path.compare(o.path.size() - 4, 4, ".npy") == 0;
  if (npy) {
    if (infos.size() != 1) {
      error = file + " is one array, but the model has " +
              std::to_string(infos.size()) + " batch inputs" + inputs +
              ": give an .npz file with one array each";
      return false;
    }
    if (!files::mapNpy(o.path, byName[infos[0].name], error))
      return false;
  } else {
    std::vector<std::pair<std::string, files::MappedTensor>> arrays;
    if (!files::mapNpz(o.path, arrays, error))
      return false;
    for (auto &[key, t] : arrays)
      byName.emplace(key, std::move(t));
  }
  for (const auto &[key, t] : byName) {
    bool known = false;
    for (const std::string &name : names)
      known |= name == key;
    if (!known) {
      error = file + " array '" + key + "' is not a batch input" + inputs;
      return false;
    }
  }
  std::string counted;
  count_ = -1;
  for (const loom_tensor_info &info : infos) {
    auto it = byName.find(info.name);
    if (it == byName.end()) {
      error = file + " has no array '" + info.name + "'" + inputs;
      return false;
    }
    files::MappedTensor &data = it->second;
    std::string where = file + " array '" + info.name + "'";
    size_t rank = data.shape.size();
    bool fits = data.dtype == info.dtype && rank == info.rank;
    for (size_t d = 1; fits && d < rank; ++d)
      fits = info.dims[d] < 0 || info.dims[d] == data.shape[d];
    if (!fits) {
      error = where + " is " + tensorText(data.dtype, data.shape) +
              ", the model's batch input '" + info.name + "' is " +
              signatureText(info) + " (dim 0 is the sample axis)";
      return false;
    }
    if (rank == 0) {
      error = where + " is a scalar; batch arrays need a sample axis (dim 0)";
      return false;
    }
    if (data.shape[0] == 0) {
      error = where + " has no samples (dim 0 is 0)";
      return false;
    }
    if (count_ >= 0 && data.shape[0] != count_) {
      error = where + " has " + std::to_string(data.shape[0]) +
              " samples (dim 0), " + counted + " has " + std::to_string(count_);
      return false;
    }
    count_ = data.shape[0];
    counted = "array '" + std::string(info.name) + "'";
    Feed feed;
    feed.name = info.name;
    feed.rowBytes = static_cast<size_t>(data.bytes / count_);
    std::vector<int64_t> dims(data.shape);
    dims[0] = local_;
    loom_tensor *batch = nullptr;
    if (loom_status s =
            loom_tensor_create(info.dtype, rank, dims.data(), &batch)) {
      error = where + ": " + takeMessage(s);
      return false;
    }
    feed.batch.reset(batch);
    feed.source = std::move(data);
    feeds_.push_back(std::move(feed));
  }
  return true;
}

bool TrainData::openTokens(loom_trainer *trainer,
                           const std::vector<loom_tensor_info> &infos,
                           const std::vector<std::string> &names,
                           const DataOptions &o, std::string &error) {
  std::string file = "token file '" + o.path + "'";
  if (o.tokens == "uint16")
    tokenBytes_ = 2;
  else if (o.tokens == "uint32")
    tokenBytes_ = 4;
  else {
    error = "--tokens takes uint16 or uint32 (the token file's element "
            "type), not '" +
            o.tokens + "'";
    return false;
  }
  std::string labels = loom_trainer_labels(trainer);
  if (infos.size() != 2 || labels.empty() ||
      (names[0] != labels && names[1] != labels)) {
    error = "--tokens trains a language model: its batch inputs must be the "
            "token ids and the labels, but they are " +
            joined(names) +
            (labels.empty() ? std::string(" and it has no labels")
                            : " (labels '" + labels + "')");
    return false;
  }
  labelsFeed_ = names[0] == labels ? 0 : 1;
  idsFeed_ = 1 - labelsFeed_;
  seq_ = o.seq;
  const loom_tensor_info &ids = infos[idsFeed_];
  if (seq_ == 0 && ids.rank == 2 && ids.dims[1] > 0)
    seq_ = ids.dims[1];
  if (seq_ <= 0) {
    error = "the model's input '" + std::string(ids.name) + "' is " +
            signatureText(ids) + ": give the tokens per sample with --seq N";
    return false;
  }
  for (const loom_tensor_info &info : infos) {
    bool fits = info.rank == 2 && (info.dims[1] < 0 || info.dims[1] == seq_) &&
                (info.dtype == LOOM_DTYPE_I64 || info.dtype == LOOM_DTYPE_I32);
    if (!fits) {
      error = "the model's batch input '" + std::string(info.name) + "' is " +
              signatureText(info) + "; --tokens with --seq " +
              std::to_string(seq_) + " feeds i64 or i32 [batch, " +
              std::to_string(seq_) + "]";
      return false;
    }
  }
  if (!tokenFile_.open(o.path, error, "token file"))
    return false;
  if (tokenFile_.size() % tokenBytes_) {
    error = file + " has " + std::to_string(tokenFile_.size()) +
            " bytes, not a whole number of " + o.tokens + " tokens";
    return false;
  }
  tokenCount_ = tokenFile_.size() / tokenBytes_;
  if (tokenCount_ < static_cast<uint64_t>(seq_) + 1) {
    error = file + " holds " + std::to_string(tokenCount_) +
            " tokens, fewer than one window of --seq " + std::to_string(seq_) +
            " + 1";
    return false;
  }
  seed_ = o.seed;
  for (const loom_tensor_info &info : infos) {
    Feed feed;
    feed.name = info.name;
    int64_t dims[2] = {local_, seq_};
    loom_tensor *batch = nullptr;
    if (loom_status s = loom_tensor_create(info.dtype, 2, dims, &batch)) {
      error = file + ": " + takeMessage(s);
      return false;
    }
    feed.batch.reset(batch);
    feed.rowBytes = static_cast<size_t>(seq_) * loom_dtype_size(info.dtype);
    feeds_.push_back(std::move(feed));
  }
  return true;
}

void TrainData::fill(int64_t micro) {
  using u128 = unsigned __int128;
  uint64_t first =
      static_cast<uint64_t>(micro) * static_cast<uint64_t>(batch_) +
      static_cast<uint64_t>(offset_);
  if (tokenBytes_) {
    // Sample s: the window of seq + 1 tokens at a position drawn from
    // (seed, s); ids its first seq, labels its last seq.
    uint64_t positions = tokenCount_ - static_cast<uint64_t>(seq_);
    Feed &ids = feeds_[idsFeed_], &labels = feeds_[labelsFeed_];
    for (int64_t i = 0; i < local_; ++i) {
      uint64_t at =
          mix(seed_ ^ mix(first + static_cast<uint64_t>(i))) % positions;
      const unsigned char *src = reinterpret_cast<const unsigned char *>(
          tokenFile_.data() + at * tokenBytes_);
      for (Feed *f : {&ids, &labels}) {
        int shift = f == &labels ? 1 : 0;
        bool wide = loom_tensor_dtype(f->batch.get()) == LOOM_DTYPE_I64;
        char *row = static_cast<char *>(loom_tensor_data(f->batch.get())) +
                    i * f->rowBytes;
        for (int64_t t = 0; t < seq_; ++t) {
          const unsigned char *p = src + (t + shift) * tokenBytes_;
          uint32_t v = tokenBytes_ == 2
                           ? static_cast<uint32_t>(p[0] | p[1] << 8)
                           : static_cast<uint32_t>(p[0]) | p[1] << 8 |
                                 p[2] << 16 | static_cast<uint32_t>(p[3]) << 24;
          if (wide)
            reinterpret_cast<int64_t *>(row)[t] = v;
          else
            reinterpret_cast<int32_t *>(row)[t] = static_cast<int32_t>(v);
        }
      }
      // The window's pages leave memory again: the file may be far larger.
      tokenFile_.release(at * tokenBytes_, (seq_ + 1) * tokenBytes_);
    }
    return;
  }
  first = static_cast<uint64_t>(
      (static_cast<u128>(micro) * static_cast<u128>(batch_) +
       static_cast<u128>(offset_)) %
      static_cast<u128>(count_));
  for (Feed &f : feeds_) {
    const char *src = f.source.data;
    char *dst = static_cast<char *>(loom_tensor_data(f.batch.get()));
    uint64_t sample = first;
    uint64_t run = sample; // the first row of the current contiguous run
    auto release = [&](uint64_t end) {
      if (f.source.file)
        f.source.file->release(
            static_cast<uint64_t>(src - f.source.file->data()) +
                run * f.rowBytes,
            (end - run) * f.rowBytes);
    };
    for (int64_t i = 0; i < local_; ++i) {
      std::memcpy(dst + i * f.rowBytes, src + sample * f.rowBytes, f.rowBytes);
      if (++sample == static_cast<uint64_t>(count_)) {
        release(sample);
        sample = run = 0;
      }
    }
    if (sample > run)
      release(sample);
  }
}

} // namespace loom::tools
