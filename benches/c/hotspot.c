/* Hotspot baseline for benches/hotspot.sh: Rodinia's hotspot stencil on a
 * rows x cols f64 grid for `steps` time steps, edge cells using themselves
 * for a missing neighbour (clamped indices), two grids swapped per step,
 * then the checksum sum(T): the same arithmetic, in the same order, as
 * benches/hotspot/hotspot.ir.
 *   gcc -O3 -march=native -o hotspot hotspot.c -lm
 *   ./hotspot temp.npy power.npy rows cols steps [reps=7]
 * Prints result=<checksum> (%.17g), median_ns, min_ns, cpu_median_ns as the
 * other baselines. */
#include "npy.h"

__attribute__((noinline)) static double hotspot(const double *restrict temp,
                                                const double *restrict power,
                                                double *restrict a, double *restrict b,
                                                long rows, long cols, long steps) {
    const double sc = 0.3413333333333333, rx1 = 0.1, ry1 = 0.1,
                 rz1 = 0.0031250000000000002, amb = 80.0;
    for (long i = 0; i < rows * cols; i++) a[i] = temp[i];
    for (long s = 0; s < steps; s++) {
        for (long r = 0; r < rows; r++) {
            long rn = r > 0 ? r - 1 : 0, rs = r < rows - 1 ? r + 1 : rows - 1;
            for (long c = 0; c < cols; c++) {
                long cw = c > 0 ? c - 1 : 0, ce = c < cols - 1 ? c + 1 : cols - 1;
                double tc = a[r * cols + c];
                double t2 = 2.0 * tc;
                double y = ((a[rn * cols + c] + a[rs * cols + c]) - t2) * ry1;
                double x = ((a[r * cols + cw] + a[r * cols + ce]) - t2) * rx1;
                double z = (amb - tc) * rz1;
                b[r * cols + c] = tc + sc * (((power[r * cols + c] + y) + x) + z);
            }
        }
        double *t = a;
        a = b;
        b = t;
    }
    double sum = 0;
    for (long i = 0; i < rows * cols; i++) sum += a[i];
    return sum;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s temp.npy power.npy rows cols steps [reps]\n", argv[0]);
        return 2;
    }
    size_t nt, np_;
    double *temp = npy_load_f64(argv[1], &nt), *power = npy_load_f64(argv[2], &np_);
    long rows = atol(argv[3]), cols = atol(argv[4]), steps = atol(argv[5]);
    if (nt != (size_t)(rows * cols) || np_ != nt) {
        fprintf(stderr, "hotspot: inputs must hold rows*cols elements\n");
        return 2;
    }
    int reps = argc > 6 ? atoi(argv[6]) : 7;
    if (reps < 1) reps = 1;
    double *a = malloc(sizeof *a * nt), *b = malloc(sizeof *b * nt);
    volatile double sink = hotspot(temp, power, a, b, rows, cols, steps); /* warm-up */
    long long *t = malloc(sizeof *t * (size_t)reps), *u = malloc(sizeof *u * (size_t)reps);
    double r = 0;
    for (int k = 0; k < reps; k++) {
        long long t0 = now_ns(), c0 = cpu_ns();
        r = hotspot(temp, power, a, b, rows, cols, steps);
        u[k] = cpu_ns() - c0;
        t[k] = now_ns() - t0;
        sink = r;
    }
    (void)sink;
    printf("hotspot %ldx%ld steps=%ld reps=%d\n", rows, cols, steps, reps);
    printf("result=%.17g\n", r);
    long long med = median_ll(t, reps);
    printf("median_ns=%lld\n", med);
    printf("min_ns=%lld\n", t[0]);
    printf("cpu_median_ns=%lld\n", median_ll(u, reps));
    return 0;
}
