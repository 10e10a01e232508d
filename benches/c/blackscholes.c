/* Black-Scholes baseline: sum of European call prices, r = 0.02, f64, no fast-math.
 * Formula and operation order of PARSEC blackscholes (BlkSchlsEqEuroNoDiv + CNDF),
 * fused into one loop that accumulates the checksum (no price array).
 *   gcc -O3 -march=native -o blackscholes blackscholes.c -lm
 *   ./blackscholes s.npy k.npy t.npy v.npy [reps=11]
 * Prints checksum=<sum> (%.17g), median_ns=<median over reps, one warm-up excluded>,
 * min_ns=<fastest rep>, cpu_median_ns=<median thread CPU time (CLOCK_THREAD_CPUTIME_ID)>;
 * the last two are more robust than median_ns on a busy machine. */
#include <math.h>
#include "npy.h"

#define RATE 0.02
#define INV_SQRT_2XPI 0.39894228040143270286

static inline double cndf(double x) {
    int sign = 0;
    if (x < 0.0) {
        x = -x;
        sign = 1;
    }
    double exp_values = exp((-0.5 * x) * x);
    double n_prime = exp_values * INV_SQRT_2XPI;
    double k = 1.0 / (1.0 + 0.2316419 * x);
    double k2 = k * k, k3 = k2 * k, k4 = k3 * k, k5 = k4 * k;
    double l1 = k * 0.319381530;
    double l2 = k2 * (-0.356563782);
    double l3 = k3 * 1.781477937;
    l2 = l2 + l3;
    l3 = k4 * (-1.821255978);
    l2 = l2 + l3;
    l3 = k5 * 1.330274429;
    l2 = l2 + l3;
    l1 = l2 + l1;
    double out = 1.0 - l1 * n_prime;
    return sign ? 1.0 - out : out;
}

static inline double call_price(double s, double k, double t, double v) {
    double sqrt_t = sqrt(t);
    double log_term = log(s / k);
    double pow_term = (v * v) * 0.5;
    double d1 = ((RATE + pow_term) * t + log_term);
    double den = v * sqrt_t;
    d1 = d1 / den;
    double d2 = d1 - den;
    double fv = k * exp(-(RATE) * t);
    return s * cndf(d1) - fv * cndf(d2);
}

__attribute__((noinline)) static double bs_sum(const double *restrict s, const double *restrict k,
                                               const double *restrict t, const double *restrict v,
                                               size_t n) {
    double acc = 0.0;
#ifdef _OPENMP /* benches/threads.sh builds it with -fopenmp too (OMP_NUM_THREADS) */
#pragma omp parallel for reduction(+ : acc) schedule(static)
#endif
    for (size_t i = 0; i < n; i++) acc += call_price(s[i], k[i], t[i], v[i]);
    return acc;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s s.npy k.npy t.npy v.npy [reps]\n", argv[0]);
        return 2;
    }
    int reps = argc > 5 ? atoi(argv[5]) : 11;
    if (reps < 1) reps = 1;
    size_t n[4];
    double *a[4];
    for (int j = 0; j < 4; j++) a[j] = npy_load_f64(argv[1 + j], &n[j]);
    for (int j = 1; j < 4; j++)
        if (n[j] != n[0]) {
            fprintf(stderr, "input lengths differ\n");
            return 1;
        }
    volatile double sink = bs_sum(a[0], a[1], a[2], a[3], n[0]); /* warm-up */
    long long *t = malloc(sizeof *t * (size_t)reps), *c = malloc(sizeof *c * (size_t)reps);
    double r = 0;
    for (int q = 0; q < reps; q++) {
        long long t0 = now_ns(), c0 = cpu_ns();
        r = bs_sum(a[0], a[1], a[2], a[3], n[0]);
        c[q] = cpu_ns() - c0;
        t[q] = now_ns() - t0;
        sink = r;
    }
    (void)sink;
    printf("blackscholes n=%zu reps=%d\n", n[0], reps);
    printf("checksum=%.17g\n", r);
    long long med = median_ll(t, reps); /* sorts t */
    printf("median_ns=%lld\n", med);
    printf("min_ns=%lld\n", t[0]);
    printf("cpu_median_ns=%lld\n", median_ll(c, reps));
    return 0;
}
