// Hand-written CUDA baselines for benches/gpu.sh: the same programs as
// sumsq.ir, blackscholes.ir, hist.ir, nbody.ir and benches/hotspot/hotspot.ir,
// written the way one writes them by hand (a grid-stride loop, a warp-shuffle
// reduction to one partial sum per block, and one block that adds the
// partials; for the histogram, 256 bins per block in shared memory merged
// with one global atomic per bin; for hotspot, a 2-D grid of threads per time
// step over two grids that swap; for n-body, a thread per body looping over
// all bodies), in f64 with the same operation order per element as the L0
// programs.
//
//   nvcc -O3 -arch=native -o baseline benches/gpu/baseline.cu
//   ./baseline sumsq|blackscholes|hist INPUT.npy REPS
//   ./baseline hotspot TEMP.npy REPS POWER.npy ROWS COLS STEPS
//   ./baseline nbody X.npy REPS Y.npy Z.npy M.npy
//
// Reads little-endian f64 vectors from the .npy files (format 1.0 or 2.0), copies
// them to the GPU once, runs the kernels once to warm up and then REPS times, and
// prints the result (%.17g) on stdout and `baseline_ns=<median kernel time>` on
// stderr (CUDA events around the kernels; the copies are not counted). Any CUDA
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

// What partial_sums adds up per element.
enum Term { SQUARE, CALL_PRICE, ELEMENT };
template <Term T>
__global__ void partial_sums(const double *x, size_t n, double *partial) {
  double acc = 0.0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    double e = x[i];
    acc += T == CALL_PRICE ? call_price(e) : T == SQUARE ? e * e : e;
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

// One time step of hotspot.ir: each cell from itself, its four neighbours
// (an edge cell uses itself for a missing one) and its power.
__global__ void hotspot_step(const double *__restrict__ t, const double *__restrict__ power,
                             double *__restrict__ out, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r >= rows || c >= cols) return;
  const double sc = 0.3413333333333333, rx1 = 0.1, ry1 = 0.1, rz1 = 0.0031250000000000002,
               amb = 80.0;
  size_t k = (size_t)r * cols + c;
  double tc = t[k];
  double tn = t[(size_t)max(r - 1, 0) * cols + c], ts = t[(size_t)min(r + 1, rows - 1) * cols + c];
  double tw = t[(size_t)r * cols + max(c - 1, 0)], te = t[(size_t)r * cols + min(c + 1, cols - 1)];
  double t2 = 2.0 * tc;
  double y = ((tn + ts) - t2) * ry1;
  double x = ((tw + te) - t2) * rx1;
  double z = (amb - tc) * rz1;
  out[k] = tc + sc * (((power[k] + y) + x) + z);
}
// nbody.ir: |a_i| for body i, from all bodies (softened by eps^2 = 0.01).
__global__ void nbody_magnitudes(const double *__restrict__ x, const double *__restrict__ y,
                                 const double *__restrict__ z, const double *__restrict__ m,
                                 size_t n, double *__restrict__ mag) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  double xi = x[i], yi = y[i], zi = z[i], ax = 0.0, ay = 0.0, az = 0.0;
  for (size_t j = 0; j < n; j++) {
    double dx = x[j] - xi, dy = y[j] - yi, dz = z[j] - zi;
    double r2 = ((dx * dx + dy * dy) + dz * dz) + 0.01;
    double s = m[j] / (r2 * sqrt(r2));
    ax += dx * s;
    ay += dy * s;
    az += dz * s;
  }
  mag[i] = sqrt((ax * ax + ay * ay) + az * az);
}
static size_t parse_size(const char *s, const char *what) {
  char *end = nullptr;
  long long v = strtoll(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < 0) die(what);
  return (size_t)v;
}
static double *to_device(const std::vector<double> &v) {
  double *d;
  CHECK(cudaMalloc(&d, std::max<size_t>(v.size(), 1) * sizeof(double)));
  CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(double), cudaMemcpyHostToDevice));
  return d;
}
// Runs `launch` (the kernels of one repetition) once to warm up and then
// `reps` times, each between two CUDA events; returns the median in ns.
template <class Launch> static double median_ns(int reps, Launch launch) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<double> times;
  for (int rep = 0; rep <= reps; rep++) {
    CHECK(cudaEventRecord(start));
    launch();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaGetLastError());
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (rep > 0) times.push_back(ms * 1e6);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}
// The result on stdout and the median on stderr, as gpu.sh reads them.
static int report(double result, double ns) {
  printf("%.17g\n", result);
  fprintf(stderr, "baseline_ns=%.0f\n", ns);
  return 0;
}
// hotspot and nbody: the programs with several inputs (argv as in the usage).
static int run_multi(int argc, char **argv, int reps, int sms) {
  bool hotspot = strcmp(argv[1], "hotspot") == 0;
  if (argc != (hotspot ? 8 : 7))
    die(hotspot ? "usage: baseline hotspot TEMP.npy REPS POWER.npy ROWS COLS STEPS"
                : "usage: baseline nbody X.npy REPS Y.npy Z.npy M.npy");
  std::vector<double> a = load_npy(argv[2]), b = load_npy(argv[4]);
  size_t n = a.size(), rows = 0, cols = 0, steps = 0;
  std::vector<double> c, d;
  if (hotspot) {
    rows = parse_size(argv[5], "ROWS must be a size");
    cols = parse_size(argv[6], "COLS must be a size");
    steps = parse_size(argv[7], "STEPS must be a size");
    if (rows * cols != n || b.size() != n) die("TEMP and POWER must hold ROWS * COLS values");
  } else {
    c = load_npy(argv[5]);
    d = load_npy(argv[6]);
    if (b.size() != n || c.size() != n || d.size() != n) die("X, Y, Z and M must have one length");
  }
  const int block = 256, grid = sms * 8;
  double *da = to_device(a), *db = to_device(b), *dc = nullptr, *dd = nullptr;
  double *dw, *dscratch, *dpartial, *dout;
  CHECK(cudaMalloc(&dw, std::max<size_t>(n, 1) * sizeof(double)));
  CHECK(cudaMalloc(&dscratch, std::max<size_t>(n, 1) * sizeof(double)));
  CHECK(cudaMalloc(&dpartial, grid * sizeof(double)));
  CHECK(cudaMalloc(&dout, sizeof(double)));
  if (!hotspot) {
    dc = to_device(c);
    dd = to_device(d);
  }
  double ns = median_ns(reps, [&] {
    if (hotspot) {
      // The steps read da (the input) first and then alternate between the
      // two scratch grids, so every repetition starts from the same input.
      double *cur = da;
      dim3 tb(32, 8), tg((unsigned)((cols + 31) / 32), (unsigned)((rows + 7) / 8));
      for (size_t s = 0; s < steps; s++) {
        double *next = s % 2 == 0 ? dw : dscratch;
        if (n > 0) hotspot_step<<<tg, tb>>>(cur, db, next, (int)rows, (int)cols);
        cur = next;
      }
      partial_sums<ELEMENT><<<grid, block>>>(cur, n, dpartial);
    } else {
      if (n > 0) nbody_magnitudes<<<(unsigned)((n + block - 1) / block), block>>>(da, db, dc, dd, n, dw);
      partial_sums<ELEMENT><<<grid, block>>>(dw, n, dpartial);
    }
    final_sum<<<1, block>>>(dpartial, grid, dout);
  });
  double result = 0.0;
  CHECK(cudaMemcpy(&result, dout, sizeof(double), cudaMemcpyDeviceToHost));
  return report(result, ns);
}

int main(int argc, char **argv) {
  if (argc >= 4 && (strcmp(argv[1], "hotspot") == 0 || strcmp(argv[1], "nbody") == 0)) {
    int reps = atoi(argv[3]);
    if (reps <= 0) die("REPS must be positive");
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    return run_multi(argc, argv, reps, sms);
  }
  if (argc != 4) die("usage: baseline sumsq|blackscholes|hist INPUT.npy REPS (or hotspot, nbody: see above)");
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

  double ns = median_ns(reps, [&] {
    if (hist) {
      CHECK(cudaMemsetAsync(dbins, 0, 256 * sizeof(unsigned long long)));
      hist_kernel<<<grid, block>>>(dx, n, dbins);
    } else {
      if (bs)
        partial_sums<CALL_PRICE><<<grid, block>>>(dx, n, dpartial);
      else
        partial_sums<SQUARE><<<grid, block>>>(dx, n, dpartial);
      final_sum<<<1, block>>>(dpartial, grid, dout);
    }
  });
  double result = 0.0;
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
  return report(result, ns);
}
