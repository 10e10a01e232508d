/* Hand-written C baselines for the LLVM benchmark (benches/llvm.sh): one
 * plain loop per kernel, no fast-math, as a C programmer writes it.
 *   gcc -O3 -march=native -o kernels kernels.c -lm
 *   ./kernels sqrtsum|meanvar|filtersum x.npy [reps=21]
 * Prints result=..., median_ns=<median over reps, one warm-up excluded>. */
#include <math.h>
#include <string.h>
#include "npy.h"

/* sum(sqrt(2x+1)) */
__attribute__((noinline)) static double sqrtsum(const double *restrict x, size_t n, double *r2) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += sqrt(2.0 * x[i] + 1.0);
    *r2 = 0;
    return s;
}

/* mean and variance in one pass (E[x^2] - E[x]^2), as examples/mean_var.ir */
__attribute__((noinline)) static double meanvar(const double *restrict x, size_t n, double *var) {
    double s = 0, ss = 0;
    for (size_t i = 0; i < n; i++) {
        s += x[i];
        ss += x[i] * x[i];
    }
    double mean = s / (double)n;
    *var = ss / (double)n - mean * mean;
    return mean;
}

/* sum of the positive elements, as examples/filter_sum.ir */
__attribute__((noinline)) static double filtersum(const double *restrict x, size_t n, double *r2) {
    double s = 0;
    for (size_t i = 0; i < n; i++)
        if (x[i] > 0) s += x[i];
    *r2 = 0;
    return s;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s sqrtsum|meanvar|filtersum x.npy [reps]\n", argv[0]);
        return 2;
    }
    double (*f)(const double *restrict, size_t, double *) =
        !strcmp(argv[1], "sqrtsum") ? sqrtsum : !strcmp(argv[1], "meanvar") ? meanvar : filtersum;
    int reps = argc > 3 ? atoi(argv[3]) : 21;
    if (reps < 1) reps = 1;
    size_t n;
    double *x = npy_load_f64(argv[2], &n);
    double r2 = 0;
    volatile double sink = f(x, n, &r2); /* warm-up */
    long long *t = malloc(sizeof *t * (size_t)reps);
    double r = 0;
    for (int k = 0; k < reps; k++) {
        long long t0 = now_ns();
        r = f(x, n, &r2);
        t[k] = now_ns() - t0;
        sink = r;
    }
    (void)sink;
    printf("%s n=%zu reps=%d\nresult=%.17g %.17g\n", argv[1], n, reps, r, r2);
    printf("median_ns=%lld\n", median_ll(t, reps));
    return 0;
}
