/* Minimal .npy reader for 1-D little-endian float64 arrays ('<f8', C order).
 * Supports format versions 1.0 (2-byte header length) and 2.0/3.0 (4-byte). */
#ifndef L0_NPY_H
#define L0_NPY_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void npy_die(const char *path, const char *msg) {
    fprintf(stderr, "%s: %s\n", path, msg);
    exit(1);
}

/* Returns a malloc'ed array of *n doubles (64-byte aligned). Exits on error. */
static double *npy_load_f64(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) npy_die(path, "cannot open");
    unsigned char pre[8];
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0)
        npy_die(path, "not a .npy file");
    uint32_t hlen;
    if (pre[6] == 1) {
        unsigned char b[2];
        if (fread(b, 1, 2, f) != 2) npy_die(path, "truncated header");
        hlen = (uint32_t)b[0] | ((uint32_t)b[1] << 8);
    } else if (pre[6] == 2 || pre[6] == 3) {
        unsigned char b[4];
        if (fread(b, 1, 4, f) != 4) npy_die(path, "truncated header");
        hlen = (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
    } else {
        npy_die(path, "unsupported .npy version");
    }
    char *h = malloc(hlen + 1);
    if (!h || fread(h, 1, hlen, f) != hlen) npy_die(path, "truncated header");
    h[hlen] = 0;
    /* header is a Python dict literal: {'descr': '<f8', 'fortran_order': False, 'shape': (N,), } */
    char *d = strstr(h, "'descr'");
    if (!d) npy_die(path, "no descr");
    d = strchr(d + 7, '\'');
    if (!d || (strncmp(d, "'<f8'", 5) != 0 && strncmp(d, "'f8'", 4) != 0))
        npy_die(path, "dtype is not little-endian float64 ('<f8')");
    char *fo = strstr(h, "'fortran_order'");
    if (!fo || !strstr(fo, "False")) npy_die(path, "fortran_order must be False");
    char *s = strstr(h, "'shape'");
    if (!s || !(s = strchr(s, '('))) npy_die(path, "no shape");
    char *end;
    unsigned long long len = strtoull(s + 1, &end, 10);
    while (*end == ' ') end++;
    if (end == s + 1 || !(*end == ',' || *end == ')')) npy_die(path, "shape must be 1-D (N,)");
    if (*end == ',') {
        end++;
        while (*end == ' ') end++;
        if (*end != ')') npy_die(path, "shape must be 1-D (N,)");
    }
    free(h);
    double *data = NULL;
    size_t bytes = (size_t)len * sizeof(double);
    if (posix_memalign((void **)&data, 64, bytes ? bytes : 64) != 0) npy_die(path, "out of memory");
    if (fread(data, 1, bytes, f) != bytes) npy_die(path, "truncated data");
    fclose(f);
    *n = (size_t)len;
    return data;
}

#include <time.h>
static inline long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
/* CPU time of this thread: not inflated when the process is preempted on a busy machine. */
static inline long long cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static int cmp_ll(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}
static long long median_ll(long long *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_ll);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
#endif
