/* Matrix-vector baseline for benches/matvec.sh: `iters` steps of
 * x <- (M x) / n from x = ones, M an n x n row-major f64 matrix, then
 * sum(x), as benches/matvec/matvec.ir; with mode `t`, x <- (M^T x) / n as
 * matvec-t.ir, written as a C programmer would: row by row, y += x[i] *
 * M[i, :] (unit stride; each y[j] is the same left fold over i).
 *   gcc -O3 -march=native -o matvec matvec.c -lm
 *   ./matvec a.npy n iters mode(n|t) [reps=11]
 * Prints result=<sum> (%.17g), median_ns, min_ns, cpu_median_ns as the
 * other baselines. */
#include "npy.h"

__attribute__((noinline)) static double run(const double *restrict m, double *restrict x,
                                            double *restrict y, size_t n, long iters,
                                            int transposed) {
    double inv = 1.0 / (double)n;
    for (size_t j = 0; j < n; j++) x[j] = 1.0;
    for (long it = 0; it < iters; it++) {
        if (transposed) {
            for (size_t j = 0; j < n; j++) y[j] = 0;
            for (size_t i = 0; i < n; i++) {
                double xi = x[i];
                for (size_t j = 0; j < n; j++) y[j] += xi * m[i * n + j];
            }
        } else {
            for (size_t i = 0; i < n; i++) {
                double s = 0;
                for (size_t j = 0; j < n; j++) s += m[i * n + j] * x[j];
                y[i] = s;
            }
        }
        for (size_t j = 0; j < n; j++) x[j] = y[j] * inv;
    }
    double s = 0;
    for (size_t j = 0; j < n; j++) s += x[j];
    return s;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s a.npy n iters n|t [reps]\n", argv[0]);
        return 2;
    }
    size_t na, n = (size_t)atol(argv[2]);
    long iters = atol(argv[3]);
    int transposed = argv[4][0] == 't';
    double *a = npy_load_f64(argv[1], &na);
    if (na != n * n) {
        fprintf(stderr, "matvec: the input must hold n*n elements\n");
        return 2;
    }
    int reps = argc > 5 ? atoi(argv[5]) : 11;
    if (reps < 1) reps = 1;
    double *x = malloc(sizeof *x * n), *y = malloc(sizeof *y * n);
    volatile double sink = run(a, x, y, n, iters, transposed); /* warm-up */
    long long *t = malloc(sizeof *t * (size_t)reps), *u = malloc(sizeof *u * (size_t)reps);
    double r = 0;
    for (int k = 0; k < reps; k++) {
        long long t0 = now_ns(), c0 = cpu_ns();
        r = run(a, x, y, n, iters, transposed);
        u[k] = cpu_ns() - c0;
        t[k] = now_ns() - t0;
        sink = r;
    }
    (void)sink;
    printf("matvec n=%zu iters=%ld mode=%c reps=%d\n", n, iters, transposed ? 't' : 'n', reps);
    printf("result=%.17g\n", r);
    long long med = median_ll(t, reps); /* sorts t */
    printf("median_ns=%lld\n", med);
    printf("min_ns=%lld\n", t[0]);
    printf("cpu_median_ns=%lld\n", median_ll(u, reps));
    return 0;
}
