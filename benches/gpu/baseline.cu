// Hand-written CUDA baselines for benches/gpu.sh: the same programs as
// sumsq.ir, blackscholes.ir and hist.ir, written the way one writes them by
// hand (a grid-stride loop, a warp-shuffle reduction to one partial sum per
// block, and one block that adds the partials; for the histogram, 256 bins
// per block in shared memory merged with one global atomic per bin), in f64
// with the same operation order per element as the L0 programs.
//
//   nvcc -O3 -arch=native -o baseline benches/gpu/baseline.cu
//   ./baseline sumsq|blackscholes|hist INPUT.npy REPS
//
// Reads a little-endian f64 vector from INPUT.npy (format 1.0 or 2.0), copies it
// to the GPU once, runs the two kernels once to warm up and then REPS times, and
// prints the result (%.17g) on stdout and `baseline_ns=<median kernel time>` on
// stderr (CUDA events around the two kernels; the copy is not counted). Any CUDA
// error or malformed input exits 1 with a message.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call)                                                            \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "baseline: %s: %s\n", #call, cudaGetErrorString(e_));    \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static void die(const char *what) {
  fprintf(stderr, "baseline: %s\n", what);
  exit(1);
}

// A .npy file holding one little-endian f64 vector.
static std::vector<double> load_npy(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) die("cannot open the input");
  unsigned char head[12];
  if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0)
    die("not a .npy file");
  size_t hlen = head[8] | (head[9] << 8);
  if (head[6] >= 2) {
    if (fread(head + 10, 1, 2, f) != 2) die("truncated .npy header");
    hlen |= (size_t)head[10] << 16 | (size_t)head[11] << 24;
  }
  std::string h(hlen, '\0');
  if (fread(&h[0], 1, hlen, f) != hlen) die("truncated .npy header");
  if (h.find("'<f8'") == std::string::npos || h.find("'fortran_order': False") == std::string::npos)
    die("the input must be a C-order <f8 vector");
  size_t open = h.find("'shape': (");
  if (open == std::string::npos) die("no shape in the .npy header");
  size_t n = strtoull(h.c_str() + open + 10, nullptr, 10);
  std::vector<double> x(n);
  if (fread(x.data(), sizeof(double), n, f) != n) die("truncated .npy data");
  fclose(f);
  return x;
}

// Abramowitz-Stegun 26.2.17, as PARSEC's CNDF and blackscholes.ir.
__device__ double cnd(double d) {
  const double inv_sqrt_2pi = 0.3989422804014327;
  double ax = fabs(d);
  double npx = exp(-0.5 * ax * ax) * inv_sqrt_2pi;
  double k = 1.0 / (1.0 + 0.2316419 * ax);
  double k2 = k * k, k3 = k2 * k, k4 = k3 * k, k5 = k4 * k;
  double l = ((k2 * -0.356563782 + k3 * 1.781477937) + k4 * -1.821255978 + k5 * 1.330274429) +
             k * 0.31938153;
  double pos = 1.0 - l * npx;
  return d < 0.0 ? 1.0 - pos : pos;
}

__device__ double call_price(double s) {
  const double K = 100.0, T = 1.0, V = 0.2, r = 0.02;
  double sqrt_t = sqrt(T);
  double d1 = ((r + V * V * 0.5) * T + log(s / K)) / (V * sqrt_t);
  double d2 = d1 - V * sqrt_t;
  double fv = K * exp(-r * T);
  return s * cnd(d1) - fv * cnd(d2);
}

// The block's sum of `v` over its threads, in thread 0 (256 threads at most).
__device__ double block_sum(double v) {
  __shared__ double warp_sums[32];
  for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)(blockDim.x / 32) ? warp_sums[lane] : 0.0;
    for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  }
  return v;
}

template <bool BS>
__global__ void partial_sums(const double *x, size_t n, double *partial) {
  double acc = 0.0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    double e = x[i];
    acc += BS ? call_price(e) : e * e;
  }
  double s = block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void final_sum(const double *partial, int m, double *out) {
  double acc = 0.0;
  for (int i = threadIdx.x; i < m; i += blockDim.x) acc += partial[i];
  double s = block_sum(acc);
  if (threadIdx.x == 0) *out = s;
}

// hist.ir: bin floor((x + 1) * 128) of 256, counted per block in shared
// memory, then added to the global bins.
__global__ void hist_kernel(const double *x, size_t n, unsigned long long *bins) {
  __shared__ unsigned long long local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    long long k = (long long)((x[i] + 1.0) * 128.0);
    if (k >= 0 && k < 256) atomicAdd(&local[k], 1ull);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    if (local[b] != 0) atomicAdd(&bins[b], local[b]);
}

int main(int argc, char **argv) {
  if (argc != 4) die("usage: baseline sumsq|blackscholes|hist INPUT.npy REPS");
  bool bs = strcmp(argv[1], "blackscholes") == 0;
  bool hist = strcmp(argv[1], "hist") == 0;
  if (!bs && !hist && strcmp(argv[1], "sumsq") != 0)
    die("the program must be sumsq, blackscholes or hist");
  int reps = atoi(argv[3]);
  if (reps <= 0) die("REPS must be positive");
  std::vector<double> x = load_npy(argv[2]);
  size_t n = x.size();

  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int block = 256, grid = sms * 8;
  double *dx, *dpartial, *dout;
  unsigned long long *dbins;
  CHECK(cudaMalloc(&dbins, 256 * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&dx, std::max<size_t>(n, 1) * sizeof(double)));
  CHECK(cudaMalloc(&dpartial, grid * sizeof(double)));
  CHECK(cudaMalloc(&dout, sizeof(double)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(double), cudaMemcpyHostToDevice));

  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<double> times;
  double result = 0.0;
  for (int rep = 0; rep <= reps; rep++) {
    CHECK(cudaEventRecord(start));
    if (hist) {
      CHECK(cudaMemsetAsync(dbins, 0, 256 * sizeof(unsigned long long)));
      hist_kernel<<<grid, block>>>(dx, n, dbins);
    } else {
      if (bs)
        partial_sums<true><<<grid, block>>>(dx, n, dpartial);
      else
        partial_sums<false><<<grid, block>>>(dx, n, dpartial);
      final_sum<<<1, block>>>(dpartial, grid, dout);
    }
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaGetLastError());
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (rep > 0) times.push_back(ms * 1e6);
  }
  if (hist) {
    // The checksum of hist.ir: sum((b + 1) * count[b]).
    unsigned long long counts[256];
    CHECK(cudaMemcpy(counts, dbins, sizeof counts, cudaMemcpyDeviceToHost));
    long long sum = 0;
    for (int b = 0; b < 256; b++) sum += (long long)(b + 1) * (long long)counts[b];
    result = (double)sum;
  } else {
    CHECK(cudaMemcpy(&result, dout, sizeof(double), cudaMemcpyDeviceToHost));
  }
  std::sort(times.begin(), times.end());
  printf("%.17g\n", result);
  fprintf(stderr, "baseline_ns=%.0f\n", times[times.size() / 2]);
  return 0;
}
