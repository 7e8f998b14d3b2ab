// The definitions of tune/boosted_trees.hpp: XGBoost's C API resolved with dlopen (the few
// functions a regression needs, declared here with the C API's types so that no XGBoost header is
// needed), and the fit and prediction through dense matrices of floats.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/tune/boosted_trees.hpp");

#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "loom/support/error.hpp"
#include "loom/support/library_symbols.hpp"
#include "loom/tune/boosted_trees.hpp"

namespace loom::tune {

namespace detail {

/// XGBoost's C API, as far as a regression needs it (xgboost/c_api.h: bst_ulong is uint64_t, the
/// handles are void*, every call returns 0 on success).
struct XgboostApi {
  using Handle = void*;
  void (*version)(int*, int*, int*) = nullptr;
  const char* (*last_error)() = nullptr;
  int (*matrix_from_dense)(const float*, uint64_t, uint64_t, float, Handle*) = nullptr;
  int (*matrix_set_float_info)(Handle, const char*, const float*, uint64_t) = nullptr;
  int (*matrix_free)(Handle) = nullptr;
  int (*booster_create)(const Handle[], uint64_t, Handle*) = nullptr;
  int (*booster_free)(Handle) = nullptr;
  int (*booster_set_param)(Handle, const char*, const char*) = nullptr;
  int (*booster_update)(Handle, int, Handle) = nullptr;
  int (*booster_predict)(Handle, Handle, int, unsigned, int, uint64_t*, const float**) = nullptr;
  bool loaded = false;
  std::string error;  // why it is not loaded
};

inline const XgboostApi& xgboost_api() {
  static const XgboostApi api = [] {
    XgboostApi a;
    const char* named = std::getenv("LOOM_XGBOOST_LIBRARY");
    const std::string path = named && *named ? named : "libxgboost.so.0";
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h && !(named && *named)) h = dlopen("libxgboost.so", RTLD_NOW | RTLD_LOCAL);  // an upstream build
    if (!h) {
      const char* e = dlerror();
      a.error = cat("XGBoost could not be loaded from '", path, "' (", e ? e : "dlopen failed",
                    "); install it with `apt-get install libxgboost0` (Debian), or name the library in "
                    "LOOM_XGBOOST_LIBRARY");
      return a;
    }
    LibrarySymbols symbols(h);
    auto get = [&](auto& fn, const char* name) { symbols.resolve(fn, name); };
    get(a.version, "XGBoostVersion");
    get(a.last_error, "XGBGetLastError");
    get(a.matrix_from_dense, "XGDMatrixCreateFromMat");
    get(a.matrix_set_float_info, "XGDMatrixSetFloatInfo");
    get(a.matrix_free, "XGDMatrixFree");
    get(a.booster_create, "XGBoosterCreate");
    get(a.booster_free, "XGBoosterFree");
    get(a.booster_set_param, "XGBoosterSetParam");
    get(a.booster_update, "XGBoosterUpdateOneIter");
    get(a.booster_predict, "XGBoosterPredict");
    if (!symbols.complete()) {
      a.error = cat("'", path, "' has no function ", symbols.first_missing(),
                    ": not an XGBoost C API library (1.x)");
      dlclose(h);
      return a;
    }
    a.loaded = true;
    return a;
  }();
  return api;
}

/// Throws loom::Error with XGBoost's message when `status` is not 0.
inline void xgboost_check(int status, const char* what) {
  if (status == 0) return;
  const char* e = xgboost_api().last_error();
  throw Error(cat("XGBoost: ", what, " failed: ", e ? e : "(no message)"));
}

/// A dense matrix of `xs` as XGBoost's DMatrix, freed with the holder.
struct XgboostMatrix {
  void* handle = nullptr;
  XgboostMatrix(const std::vector<std::vector<double>>& xs, size_t columns) {
    std::vector<float> flat;
    flat.reserve(xs.size() * columns);
    for (const auto& row : xs) {
      if (row.size() != columns)
        throw Error(cat("BoostedTrees: a row has ", row.size(), " values where ", columns,
                        " are expected (the first row's, or the fitted trees')"));
      for (double v : row) flat.push_back(static_cast<float>(v));
    }
    // NaN marks a missing value; every value here is present.
    xgboost_check(xgboost_api().matrix_from_dense(flat.data(), xs.size(), columns, std::nanf(""), &handle),
                  "XGDMatrixCreateFromMat");
  }
  ~XgboostMatrix() {
    if (handle) xgboost_api().matrix_free(handle);
  }
  XgboostMatrix(const XgboostMatrix&) = delete;
  XgboostMatrix& operator=(const XgboostMatrix&) = delete;
};

}  // namespace detail

LOOM_DECL bool boosted_trees_available(std::string* why) {
  const detail::XgboostApi& api = detail::xgboost_api();
  if (!api.loaded && why) *why = api.error;
  return api.loaded;
}

LOOM_DECL std::string boosted_trees_version() {
  const detail::XgboostApi& api = detail::xgboost_api();
  if (!api.loaded) return "";
  int major = 0, minor = 0, patch = 0;
  api.version(&major, &minor, &patch);
  return cat(major, ".", minor, ".", patch);
}

LOOM_DECL BoostedTrees::BoostedTrees(int rounds, int max_depth) : rounds_(rounds), max_depth_(max_depth) {
  std::string why;
  if (!boosted_trees_available(&why)) throw Error(cat("BoostedTrees: ", why));
  if (rounds < 1 || max_depth < 1)
    throw Error(
        cat("BoostedTrees: rounds (", rounds, ") and max_depth (", max_depth, ") must be at least 1"));
}

LOOM_DECL BoostedTrees::~BoostedTrees() {
  if (booster_) detail::xgboost_api().booster_free(booster_);
}

LOOM_DECL void BoostedTrees::fit(const std::vector<std::vector<double>>& xs, const std::vector<double>& ys) {
  if (xs.empty() || xs.size() != ys.size())
    throw Error(cat("BoostedTrees::fit: ", xs.size(), " rows and ", ys.size(),
                    " targets; give one target per row, "
                    "and at least one row"));
  const detail::XgboostApi& api = detail::xgboost_api();
  const size_t columns = xs.front().size();
  detail::XgboostMatrix train(xs, columns);
  const std::vector<float> labels(ys.begin(), ys.end());
  detail::xgboost_check(api.matrix_set_float_info(train.handle, "label", labels.data(), labels.size()),
                        "XGDMatrixSetFloatInfo(label)");
  void* booster = nullptr;
  detail::xgboost_check(api.booster_create(&train.handle, 1, &booster), "XGBoosterCreate");
  try {
    const std::string depth = cat(max_depth_);
    const std::pair<const char*, const char*> params[] = {
        {"objective", "reg:squarederror"},
        {"max_depth", depth.c_str()},
        {"eta", "0.3"},
        {"nthread", "1"},  // the tuner's measurements own the cores; one thread is also fork-safe
        {"seed", "1"},
        {"verbosity", "0"}};
    for (const auto& [name, value] : params)
      detail::xgboost_check(api.booster_set_param(booster, name, value), "XGBoosterSetParam");
    for (int i = 0; i < rounds_; ++i)
      detail::xgboost_check(api.booster_update(booster, i, train.handle), "XGBoosterUpdateOneIter");
  } catch (...) {
    api.booster_free(booster);
    throw;
  }
  if (booster_) api.booster_free(booster_);
  booster_ = booster;
  columns_ = columns;
}

LOOM_DECL std::vector<double> BoostedTrees::predict(const std::vector<std::vector<double>>& xs) const {
  if (!booster_) throw Error("BoostedTrees::predict: call fit() first");
  if (xs.empty()) return {};
  detail::XgboostMatrix m(xs, columns_);
  uint64_t length = 0;
  const float* out = nullptr;
  detail::xgboost_check(detail::xgboost_api().booster_predict(booster_, m.handle, 0, 0, 0, &length, &out),
                        "XGBoosterPredict");
  if (length != xs.size())
    throw Error(cat("XGBoost: XGBoosterPredict gave ", length, " predictions for ", xs.size(), " rows"));
  return std::vector<double>(out, out + length);
}

}  // namespace loom::tune
