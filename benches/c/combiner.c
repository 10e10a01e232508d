/* Baselines for user-defined reduce and scan operators (issue 42): an argmin
 * (the first index of the least value), the linear recurrence
 * x[i] = a[i] * x[i-1] + b[i] (x[-1] = 0), and a 256-bin histogram of the
 * indices (k * 7919) % 256 (as benches/combiner.sh writes them for L0;
 * computed here before timing), and the same histogram of weights a[i]
 * (a float sum per bin), each one sequential loop.
 *   gcc -O3 -march=native -o combiner combiner.c -lm
 *   ./combiner x.npy y.npy [reps=11]
 * Prints argmin=<v> <i>, linrec_last=<x[n-1]>, then median_ns= for each. */
#include "npy.h"

__attribute__((noinline)) static void argmin(const double *x, size_t n, double *v, long *i) {
    double bv = __builtin_inf();
    long bi = -1;
    for (size_t k = 0; k < n; k++)
        if (x[k] < bv) {
            bv = x[k];
            bi = (long)k;
        }
    *v = bv;
    *i = bi;
}

__attribute__((noinline)) static void linrec(const double *a, const double *b, double *x, size_t n) {
    double c = 0;
    for (size_t k = 0; k < n; k++) {
        c = a[k] * c + b[k];
        x[k] = c;
    }
}

__attribute__((noinline)) static long *hist(const long *is, size_t n) {
    long *bins = calloc(256, sizeof *bins);
    for (size_t k = 0; k < n; k++) {
        long b = is[k];
        if (b >= 0 && b < 256) bins[b] += 1;
    }
    return bins;
}

__attribute__((noinline)) static double *fhist(const long *is, const double *w, size_t n) {
    double *bins = calloc(256, sizeof *bins);
    for (size_t k = 0; k < n; k++) {
        long b = is[k];
        if (b >= 0 && b < 256) bins[b] += w[k];
    }
    return bins;
}

static long long median(long long *t, int reps) {
    qsort(t, (size_t)reps, sizeof *t, cmp_ll);
    return t[reps / 2];
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s x.npy y.npy [reps]\n", argv[0]);
        return 2;
    }
    int reps = argc > 3 ? atoi(argv[3]) : 11;
    if (reps < 1) reps = 1;
    size_t n, m;
    double *a = npy_load_f64(argv[1], &n);
    double *b = npy_load_f64(argv[2], &m);
    if (m != n) npy_die(argv[2], "length differs");
    long long *t = malloc(sizeof *t * (size_t)reps);
    double v;
    long i;
    argmin(a, n, &v, &i);
    for (int k = 0; k < reps; k++) {
        long long t0 = now_ns();
        argmin(a, n, &v, &i);
        t[k] = now_ns() - t0;
    }
    printf("argmin=%.17g %ld\nargmin_median_ns=%lld\n", v, i, median(t, reps));
    for (int k = 0; k < reps; k++) {
        /* A fresh result each call, as the compiled function returns one. */
        long long t0 = now_ns();
        double *x = malloc(sizeof *x * (n ? n : 1));
        linrec(a, b, x, n);
        t[k] = now_ns() - t0;
        if (k == reps - 1) printf("linrec_last=%.17g\n", n ? x[n - 1] : 0.0);
        free(x);
    }
    printf("linrec_median_ns=%lld\n", median(t, reps));
    long *is = malloc(sizeof *is * (n ? n : 1));
    for (size_t k = 0; k < n; k++) is[k] = (long)((k * 7919) % 256);
    long b0 = 0;
    for (int k = 0; k < reps; k++) {
        long long t0 = now_ns();
        long *bins = hist(is, n);
        t[k] = now_ns() - t0;
        b0 = bins[0];
        free(bins);
    }
    printf("hist_bin0=%ld\nhist_median_ns=%lld\n", b0, median(t, reps));
    double f0 = 0;
    for (int k = 0; k < reps; k++) {
        long long t0 = now_ns();
        double *bins = fhist(is, a, n);
        t[k] = now_ns() - t0;
        f0 = bins[0];
        free(bins);
    }
    printf("fhist_bin0=%.17g\nfhist_median_ns=%lld\n", f0, median(t, reps));
    return 0;
}
