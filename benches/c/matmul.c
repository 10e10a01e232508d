/* Matrix product baseline for benches/matmul.sh: C = A * B for n x n f64
 * matrices in row-major order, the i-k-j loop order (both B and C read with
 * unit stride), then the checksum sum(C) row by row, as benches/matmul/matmul.ir.
 *   gcc -O3 -march=native -o matmul matmul.c -lm
 *   ./matmul a.npy b.npy n [reps=11]
 * Prints result=<checksum> (%.17g), median_ns, min_ns, cpu_median_ns as the
 * other baselines (times include the checksum, as the L0 program's do). */
#include "npy.h"

__attribute__((noinline)) static double matmul(const double *restrict a,
                                               const double *restrict b,
                                               double *restrict c, size_t n) {
    for (size_t i = 0; i < n * n; i++) c[i] = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < n; k++) {
            double aik = a[i * n + k];
            for (size_t j = 0; j < n; j++) c[i * n + j] += aik * b[k * n + j];
        }
    double s = 0;
    for (size_t i = 0; i < n; i++) {
        double r = 0;
        for (size_t j = 0; j < n; j++) r += c[i * n + j];
        s += r;
    }
    return s;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s a.npy b.npy n [reps]\n", argv[0]);
        return 2;
    }
    size_t na, nb, n = (size_t)atol(argv[3]);
    double *a = npy_load_f64(argv[1], &na), *b = npy_load_f64(argv[2], &nb);
    if (na != n * n || nb != n * n) {
        fprintf(stderr, "matmul: inputs must hold n*n elements\n");
        return 2;
    }
    int reps = argc > 4 ? atoi(argv[4]) : 11;
    if (reps < 1) reps = 1;
    double *c = malloc(sizeof *c * n * n);
    volatile double sink = matmul(a, b, c, n); /* warm-up */
    long long *t = malloc(sizeof *t * (size_t)reps), *u = malloc(sizeof *u * (size_t)reps);
    double r = 0;
    for (int k = 0; k < reps; k++) {
        long long t0 = now_ns(), c0 = cpu_ns();
        r = matmul(a, b, c, n);
        u[k] = cpu_ns() - c0;
        t[k] = now_ns() - t0;
        sink = r;
    }
    (void)sink;
    printf("matmul n=%zu reps=%d\n", n, reps);
    printf("result=%.17g\n", r);
    long long med = median_ll(t, reps); /* sorts t */
    printf("median_ns=%lld\n", med);
    printf("min_ns=%lld\n", t[0]);
    printf("cpu_median_ns=%lld\n", median_ll(u, reps));
    return 0;
}
