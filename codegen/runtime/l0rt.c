/* L0 runtime for object files: the same ABI as codegen/src/runtime.rs. */
#include "l0rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Thread_local int64_t fault_id = -1;
static _Thread_local int64_t fault_payload[3];

void l0rt_fault(int64_t id, int64_t a, int64_t b, int64_t c) {
    fault_id = id;
    fault_payload[0] = a;
    fault_payload[1] = b;
    fault_payload[2] = c;
}

/* The largest single allocation: half the physical memory (at least 1 GiB),
 * so that an overcommitted malloc never gets the process killed later
 * (the same limit as the JIT runtime, codegen/src/runtime.rs). */
static int64_t max_alloc_bytes(void) {
    static int64_t max = 0;
    if (max == 0) {
        long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
        int64_t phys = (pages > 0 && size > 0) ? (int64_t)pages * (int64_t)size : INT64_MAX;
        max = phys / 2 > ((int64_t)1 << 30) ? phys / 2 : ((int64_t)1 << 30);
    }
    return max;
}

void *l0rt_alloc(int64_t bytes) {
    if (bytes < 0 || bytes > max_alloc_bytes()) return NULL;
    return malloc(bytes > 0 ? (size_t)bytes : 1);
}

void l0rt_free(void *p) { free(p); }

void *l0rt_copy(const void *src, int64_t bytes) {
    void *p = l0rt_alloc(bytes);
    if (p && bytes > 0) memcpy(p, src, (size_t)bytes);
    return p;
}

static l0_arr_header *arr_new(int64_t n, int64_t es, int zeroed) {
    if (n < 0 || es < 0) return NULL;
    if (es > 0 && n > max_alloc_bytes() / es) return NULL;
    size_t count = n > 0 ? (size_t)n : 1, size = es > 0 ? (size_t)es : 1;
    void *data = zeroed ? calloc(count, size) : malloc(count * size);
    if (!data) return NULL;
    l0_arr_header *h = malloc(sizeof *h);
    if (!h) {
        free(data);
        return NULL;
    }
    h->data = data;
    h->len = n;
    h->cap = n > 0 ? n : 1;
    h->index = NULL;
    return h;
}

l0_arr_header *l0rt_arr_new(int64_t n, int64_t es) { return arr_new(n, es, 1); }

l0_arr_header *l0rt_arr_new_uninit(int64_t n, int64_t es) { return arr_new(n, es, 0); }

l0_arr_header *l0rt_arr_from(const void *src, int64_t n, int64_t es) {
    l0_arr_header *h = l0rt_arr_new_uninit(n, es);
    if (h && n > 0) memcpy(h->data, src, (size_t)(n * es));
    return h;
}

l0_arr_header *l0rt_arr_adopt(void *data, int64_t n) {
    l0_arr_header *h = malloc(sizeof *h);
    if (!h) return NULL;
    h->data = data;
    h->len = n;
    h->cap = n;
    h->index = NULL;
    return h;
}

int8_t l0rt_arr_grow(l0_arr_header *h, int64_t es) {
    if (h->len < h->cap) return 1;
    int64_t cap = (h->cap < 4 ? 4 : h->cap) * 2;
    if (es > 0 && cap > max_alloc_bytes() / es) return 0;
    void *p = realloc(h->data, (size_t)(cap * es));
    if (!p) return 0;
    h->data = p;
    h->cap = cap;
    return 1;
}

/* Hash index of a bucket's keys: open addressing, slot = position + 1. */
typedef struct {
    int64_t count, mask;
    int64_t *slots;
} l0_key_index;

static void free_index(void *p) {
    l0_key_index *ix = p;
    if (ix) {
        free(ix->slots);
        free(ix);
    }
}

void l0rt_arr_release(l0_arr_header *h) {
    if (h) {
        free_index(h->index);
        free(h);
    }
}

void l0rt_arr_free(l0_arr_header *h) {
    if (h) {
        free(h->data);
        l0rt_arr_release(h);
    }
}

int64_t l0rt_find_or_insert(l0_arr_header *h, int64_t key, int64_t es) {
    unsigned char kb[8];
    for (int k = 0; k < 8; k++) kb[k] = (unsigned char)((uint64_t)key >> (8 * k));
    for (int64_t i = 0; i < h->len; i++)
        if (memcmp((char *)h->data + i * es, kb, (size_t)es) == 0) return i;
    if (!l0rt_arr_grow(h, es)) return -1;
    memcpy((char *)h->data + h->len * es, kb, (size_t)es);
    return h->len++;
}

static uint64_t key_low(uint64_t bits, int64_t es) {
    return es >= 8 ? bits : bits & ((UINT64_C(1) << (8 * es)) - 1);
}

static uint64_t key_hash(uint64_t bits) {
    uint64_t h = bits * UINT64_C(0x9E3779B97F4A7C15);
    return h ^ (h >> 29);
}

static uint64_t key_at(const l0_arr_header *h, int64_t i, int64_t es) {
    uint64_t b = 0;
    memcpy(&b, (const char *)h->data + i * es, (size_t)es); /* little endian */
    return b;
}

static void key_place(l0_key_index *ix, uint64_t bits, int64_t i) {
    int64_t p = (int64_t)key_hash(bits) & ix->mask;
    while (ix->slots[p] != 0) p = (p + 1) & ix->mask;
    ix->slots[p] = i + 1;
}

static int key_rebuild(l0_arr_header *h, int64_t es) {
    int64_t n = h->len > 0 ? h->len : 0, slots = 16;
    while (slots < 2 * n + 2) slots *= 2;
    int64_t *mem = calloc((size_t)slots, 8);
    if (!mem) return 0;
    if (!h->index) {
        l0_key_index *ix = malloc(sizeof *ix);
        if (!ix) {
            free(mem);
            return 0;
        }
        ix->slots = NULL;
        h->index = ix;
    }
    l0_key_index *ix = h->index;
    free(ix->slots);
    ix->slots = mem;
    ix->mask = slots - 1;
    ix->count = n;
    for (int64_t i = 0; i < n; i++) key_place(ix, key_at(h, i, es), i);
    return 1;
}

int64_t l0rt_find_or_insert_hashed(l0_arr_header *h, int64_t key, int64_t es) {
    uint64_t bits = key_low((uint64_t)key, es);
    l0_key_index *ix = h->index;
    if ((!ix || ix->count != h->len) && !key_rebuild(h, es)) return -1;
    ix = h->index;
    for (int64_t p = (int64_t)key_hash(bits) & ix->mask; ix->slots[p] != 0; p = (p + 1) & ix->mask)
        if (key_at(h, ix->slots[p] - 1, es) == bits) return ix->slots[p] - 1;
    if (!l0rt_arr_grow(h, es)) return -1;
    memcpy((char *)h->data + h->len * es, &bits, (size_t)es);
    int64_t i = h->len++;
    if (h->len * 2 > ix->mask + 1) return key_rebuild(h, es) ? i : -1;
    key_place(ix, bits, i);
    ix->count = h->len;
    return i;
}

void l0rt_vec_drop(void *data, int64_t n, int64_t depth) {
    if (depth > 0 && data) {
        l0_vec *d = data;
        for (int64_t k = 0; k < n; k++) l0rt_vec_drop(d[k].data, d[k].len, depth - 1);
    }
    free(data);
}

void l0_vec_free(void *data, int64_t len, int64_t depth) { l0rt_vec_drop(data, len, depth); }

void *l0rt_vec_clone(const void *src, int64_t n, int64_t es, int64_t depth) {
    if (depth <= 0) return l0rt_copy(src, n * es);
    l0_vec *p = l0rt_alloc(n * (int64_t)sizeof(l0_vec));
    if (!p) return NULL;
    const l0_vec *s = src;
    for (int64_t k = 0; k < n; k++) {
        void *c = l0rt_vec_clone(s[k].data, s[k].len, es, depth - 1);
        if (!c) {
            l0rt_vec_drop(p, k, depth);
            return NULL;
        }
        p[k].data = c;
        p[k].len = s[k].len;
    }
    return p;
}

l0_arr_header *l0rt_arr_from_deep(const void *src, int64_t n, int64_t es, int64_t depth) {
    void *data = l0rt_vec_clone(src, n, es, depth);
    if (!data) return NULL;
    l0_arr_header *h = malloc(sizeof *h);
    if (!h) {
        l0rt_vec_drop(data, n, depth);
        return NULL;
    }
    h->data = data;
    h->len = n;
    h->cap = n; /* exactly n elements: the first push reallocates */
    h->index = NULL;
    return h;
}

l0_arr_header *l0rt_arr_new_arrs(int64_t n, int64_t es) {
    l0_arr_header *h = l0rt_arr_new(n, 8);
    if (!h) return NULL;
    l0_arr_header **slots = h->data;
    for (int64_t k = 0; k < n; k++) {
        slots[k] = l0rt_arr_new(0, es);
        if (!slots[k]) {
            for (int64_t j = 0; j < k; j++) l0rt_arr_free(slots[j]);
            l0rt_arr_free(h);
            return NULL;
        }
    }
    return h;
}

int8_t l0rt_parallel_for(l0_chunk_fn f, const void *env, int64_t n, int64_t depth) {
    for (int64_t c = 0; c < n; c++)
        if (f(env, c, depth)) return 1;
    return 0;
}

const char *l0_fault_message(char *buf, size_t n) {
    const char *t = l0_fault_messages;
    for (int64_t i = 0; i < fault_id && *t; i++) t += strlen(t) + 1;
    if (fault_id < 0 || !*t) {
        snprintf(buf, n, "error: unknown fault %lld", (long long)fault_id);
        return buf;
    }
    /* "loc: template" -> "loc: error: message", substituting {0} {1} {2}. */
    const char *colon = strstr(t, ": ");
    size_t o = 0;
    for (const char *p = t; *p && o + 1 < n; p++) {
        if (p == colon) {
            o += (size_t)snprintf(buf + o, n - o, ": error: ");
            p++;
        } else if (p[0] == '{' && p[1] >= '0' && p[1] <= '2' && p[2] == '}') {
            o += (size_t)snprintf(buf + o, n - o, "%lld", (long long)fault_payload[p[1] - '0']);
            p += 2;
        } else {
            buf[o++] = *p;
        }
        if (o >= n) o = n - 1;
    }
    buf[o] = 0;
    return buf;
}
