/* Sum of squares baseline: eight independent accumulators, no fast-math.
 *   gcc -O3 -march=native -o sumsq sumsq.c -lm
 *   ./sumsq x.npy [reps=21]
 * Prints result=<sum> (%.17g), median_ns=<median over reps, one warm-up excluded>,
 * min_ns=<fastest rep>, cpu_median_ns=<median thread CPU time (CLOCK_THREAD_CPUTIME_ID)>;
 * the last two are more robust than median_ns on a busy machine. */
#include "npy.h"

__attribute__((noinline)) static double sumsq(const double *restrict x, size_t n) {
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
    size_t nb = n / 8;
#ifdef _OPENMP /* benches/threads.sh builds it with -fopenmp too (OMP_NUM_THREADS) */
#pragma omp parallel for reduction(+ : a0, a1, a2, a3, a4, a5, a6, a7) schedule(static)
#endif
    for (size_t b = 0; b < nb; b++) {
        size_t i = 8 * b;
        a0 += x[i + 0] * x[i + 0];
        a1 += x[i + 1] * x[i + 1];
        a2 += x[i + 2] * x[i + 2];
        a3 += x[i + 3] * x[i + 3];
        a4 += x[i + 4] * x[i + 4];
        a5 += x[i + 5] * x[i + 5];
        a6 += x[i + 6] * x[i + 6];
        a7 += x[i + 7] * x[i + 7];
    }
    for (size_t i = 8 * nb; i < n; i++) a0 += x[i] * x[i];
    return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s x.npy [reps]\n", argv[0]);
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 21;
    if (reps < 1) reps = 1;
    size_t n;
    double *x = npy_load_f64(argv[1], &n);
    volatile double sink = sumsq(x, n); /* warm-up */
    long long *t = malloc(sizeof *t * (size_t)reps), *c = malloc(sizeof *c * (size_t)reps);
    double r = 0;
    for (int k = 0; k < reps; k++) {
        long long t0 = now_ns(), c0 = cpu_ns();
        r = sumsq(x, n);
        c[k] = cpu_ns() - c0;
        t[k] = now_ns() - t0;
        sink = r;
    }
    (void)sink;
    printf("sumsq n=%zu reps=%d\n", n, reps);
    printf("result=%.17g\n", r);
    long long med = median_ll(t, reps); /* sorts t */
    printf("median_ns=%lld\n", med);
    printf("min_ns=%lld\n", t[0]);
    printf("cpu_median_ns=%lld\n", median_ll(c, reps));
    return 0;
}
