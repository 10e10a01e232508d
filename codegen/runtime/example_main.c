/* Calls the L0 function @main(vec<f64>) -> f64 of examples/sumsq.ir,
 * compiled with `l0-opt --pass=fuse,lower --emit=obj -o f.o examples/sumsq.ir`.
 * Usage: ./sumsq [n]   (sums i*i for x = 0, 1, ..., n-1; default 10) */
#include <stdio.h>
#include <stdlib.h>

#include "l0rt.h"

int8_t l0_main(const double *x, int64_t len, double *out);

int main(int argc, char **argv) {
    int64_t n = argc > 1 ? atoll(argv[1]) : 10;
    double *x = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    double want = 0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = (double)i;
        want += (double)i * (double)i;
    }
    double r;
    if (l0_main(x, n, &r) != 0) {
        char msg[512];
        fprintf(stderr, "%s\n", l0_fault_message(msg, sizeof msg));
        return 1;
    }
    printf("sumsq(0..%lld) = %.17g (expected %.17g)\n", (long long)n, r, want);
    free(x);
    return r == want ? 0 : 2;
}
