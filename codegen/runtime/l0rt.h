/* L0 runtime for object files emitted by the Cranelift backend
 * (`l0-opt --pass=fuse,lower --emit=obj -o f.o prog.ir`).
 *
 * Each L0 function @f becomes
 *     int8_t l0_f(<flattened params>..., void *out);
 * returning 0 on success and 1 on a run-time fault (see l0_fault_message).
 * Parameters are flattened in order: i1 -> int8_t (0/1), i32 -> int32_t,
 * i64/index -> int64_t, f32 -> float, f64 -> double,
 * vec<T> -> (const T *data, int64_t len), mat<T> -> (const T *data,
 * int64_t rows, int64_t cols) row-major. `out` points to a C struct holding
 * the flattened results in order with natural alignment; vector and matrix
 * results are fresh malloc'ed buffers owned by the caller (release with
 * free). Arguments are only read.
 *
 * Nested vectors: an element of vec<vec<T>> is an l0_vec descriptor
 * {data, len} (16 bytes), so a vec<vec<T>> parameter is
 * (const l0_vec *data, int64_t len) with each data[k].data pointing to
 * data[k].len elements of T; deeper nesting repeats the scheme
 * (vec<vec<vec<T>>>: descriptors whose data are descriptors). A returned
 * nested vector owns every level: release it with
 * l0_vec_free(data, len, depth), depth = number of vec levels below the
 * outer one (1 for vec<vec<T>>); an inner data pointer may be NULL when its
 * len is 0.
 *
 * Link: gcc main.c f.o l0rt.c -lm
 */
#ifndef L0RT_H
#define L0RT_H

#include <stddef.h>
#include <stdint.h>

/* Heap header of an arr<T> (compiled code only). `index` is the hash index
 * of a bucket's keys (l0rt_find_or_insert_hashed), NULL otherwise. */
typedef struct {
    void *data;
    int64_t len;
    int64_t cap;
    void *index;
} l0_arr_header;

/* One element of a vec<vec<T>> (or of an arr<vec<T>>). */
typedef struct {
    void *data;
    int64_t len;
} l0_vec;

/* Frees a returned nested vector: the inner vectors (depth levels), then data. */
void l0_vec_free(void *data, int64_t len, int64_t depth);

/* Called by compiled code. */
void l0rt_fault(int64_t id, int64_t a, int64_t b, int64_t c);
void *l0rt_alloc(int64_t bytes);
void l0rt_free(void *p);
void *l0rt_copy(const void *src, int64_t bytes);
l0_arr_header *l0rt_arr_new(int64_t n, int64_t es);
/* n elements of es bytes, not initialised (arr.alloc {uninit}). */
l0_arr_header *l0rt_arr_new_uninit(int64_t n, int64_t es);
l0_arr_header *l0rt_arr_from(const void *src, int64_t n, int64_t es);
/* A header around an owned vector's buffer (arr.from_vec at its last use). */
l0_arr_header *l0rt_arr_adopt(void *data, int64_t n);
int8_t l0rt_arr_grow(l0_arr_header *h, int64_t es);
void l0rt_arr_free(l0_arr_header *h);
int64_t l0rt_find_or_insert(l0_arr_header *h, int64_t key, int64_t es);
/* The same through a hash index, for an arr that nothing else writes. */
int64_t l0rt_find_or_insert_hashed(l0_arr_header *h, int64_t key, int64_t es);
/* Frees a header and its index, not its data (a vector took it). */
void l0rt_arr_release(l0_arr_header *h);
/* Nested containers: deep free / copy of n elements owning `depth` levels
 * of vectors above elements of es bytes; arrays of fresh empty arrays. */
void l0rt_vec_drop(void *data, int64_t n, int64_t depth);
void *l0rt_vec_clone(const void *src, int64_t n, int64_t es, int64_t depth);
l0_arr_header *l0rt_arr_from_deep(const void *src, int64_t n, int64_t es, int64_t depth);
l0_arr_header *l0rt_arr_new_arrs(int64_t n, int64_t es);
/* Runs the chunk function f(env, c, depth) of an scf.forall for c in
 * [0, n) (here in order, on the calling thread; the JIT's runtime uses a
 * thread pool); 1 after the first fault, else 0. */
typedef int8_t (*l0_chunk_fn)(const void *env, int64_t c, int64_t depth);
int8_t l0rt_parallel_for(l0_chunk_fn f, const void *env, int64_t n, int64_t depth);

/* Defined by the object file: one "file:line:col: message" template per
 * fault id, each NUL-terminated, then an empty string. */
extern const char l0_fault_messages[];

/* After a call returned 1: writes "file:line:col: error: message" of the
 * last fault of this thread into buf and returns buf. */
const char *l0_fault_message(char *buf, size_t n);

#endif
