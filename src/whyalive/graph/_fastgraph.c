/*
 * whyalive.graph._fastgraph -- graph building and graph algorithms over captured
 * cyclic garbage, fast enough to analyse ~10^6 objects in about the time of
 * one extra gc.collect().
 *
 * The pure-Python twin lives in whyalive/graph/twin.py and
 * whyalive/graph/twin_workspace.py (whyalive.graph.core picks one); both must
 * produce identical results, so any change to iteration order here must be mirrored
 * there.
 *
 * Safety rules followed throughout:
 *   - objects are compared by pointer only: no user __hash__/__eq__ runs;
 *   - no user code runs at all while raw pointers are held (only tp_traverse,
 *     PyType_IsSubtype, which walks tp_mro, and raw memory allocation);
 *   - the collector is disabled while traversing, because a collection could
 *     run finalizers, mutate gc.garbage, or free objects we point at.
 */
#define PY_SSIZE_T_CLEAN
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap */
#endif
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#if PY_VERSION_HEX < 0x030A0000
#error "whyalive.graph._fastgraph needs CPython >= 3.10 (PyGC_Disable)"
#endif

/* PyObject_IS_GC and PyObject_GC_IsTracked are calls into libpython; passes over
 * 10^6 objects test every one, so these read the same fields inline: the type's
 * flags (and tp_is_gc), and, with the GIL, the GC header's next link (zero when
 * untracked, in CPython 3.10-3.14). */
static inline int
is_gc_object(PyObject *o)
{
    PyTypeObject *tp = Py_TYPE(o);
    return PyType_IS_GC(tp) && (tp->tp_is_gc == NULL || tp->tp_is_gc(o));
}

static inline int
is_tracked_gc(PyObject *o)
{
#ifdef Py_GIL_DISABLED
    return PyObject_IS_GC(o) && PyObject_GC_IsTracked(o);
#else
    return is_gc_object(o) && ((const uintptr_t *)o)[-2] != 0;
#endif
}

/* ------------------------------------------------------------------ */
/* Big arrays                                                          */

/* At 10^6 objects the table and the CSR arrays are tens of MiB of fresh
 * memory. With 4 KiB pages the kernel's page faults cost about as much as
 * building the graph, so big arrays are their own mappings with transparent
 * huge pages requested (512 times fewer faults where the kernel grants them).
 * A header in front records how each array was obtained. */
#define BIG_HEADER 64 /* keeps the data cache-line aligned */
/* tracemalloc domain of the mapped arrays, so memory profiles (and our
 * benchmark's peak figure) still see them. */
#define BIG_TRACE_DOMAIN 0x57484C56u
#define BIG_MAP_MIN ((size_t)1 << 21)

typedef struct {
    size_t nbytes;
    size_t maplen; /* 0: from PyMem_RawMalloc */
} big_header;

/* Fresh pages cost the kernel's zeroing and a fault each: at 10^6 objects an
 * analysis maps over 100 MiB, and that was a quarter of its time. While an
 * analysis holds the scratch (hold_scratch()), mapped arrays it frees are
 * kept here and its next arrays are cut from them (best fit; the rest of a
 * piece stays for later ones); all of it is unmapped when it lets go. Pieces
 * stay in the tracemalloc domain, so memory profiles still see them. The
 * GIL guards this state; a build without one keeps no pieces. */
#define POOL_PIECES 32
#define POOL_MIN ((size_t)1 << 18) /* smaller arrays come from the heap */
#define PAGE_ROUND(x) (((x) + 4095) & ~(size_t)4095)
typedef struct {
    char *base;
    size_t len;
} pool_piece;
static pool_piece pool[POOL_PIECES];
static int pool_count;
static Py_ssize_t pool_holds;

#if defined(__linux__) && defined(MAP_ANONYMOUS) && !defined(Py_GIL_DISABLED)
#define USE_POOL 1
#else
#define USE_POOL 0
#endif

static void
pool_unmap(char *base, size_t len)
{
#if USE_POOL
    (void)PyTraceMalloc_Untrack(BIG_TRACE_DOMAIN, (uintptr_t)base);
    munmap(base, len);
#else
    (void)base;
    (void)len;
#endif
}

/* A piece of at least total bytes, or NULL; *maplen gets its length. */
static char *
pool_take(size_t total, size_t *maplen)
{
    int best = -1;
    for (int k = 0; k < pool_count; k++) {
        if (pool[k].len >= total && (best < 0 || pool[k].len < pool[best].len)) {
            best = k;
        }
    }
    if (best < 0) {
        return NULL;
    }
    char *base = pool[best].base;
    size_t len = pool[best].len, used = PAGE_ROUND(total);
    if (len - (used < len ? used : len) >= POOL_MIN) {
        /* The rest stays a piece of its own (munmap takes any page range). */
        pool[best].base = base + used;
        pool[best].len = len - used;
        (void)PyTraceMalloc_Untrack(BIG_TRACE_DOMAIN, (uintptr_t)base);
        (void)PyTraceMalloc_Track(BIG_TRACE_DOMAIN, (uintptr_t)base, used);
        (void)PyTraceMalloc_Track(BIG_TRACE_DOMAIN, (uintptr_t)(base + used), len - used);
        len = used;
    } else {
        pool[best] = pool[--pool_count];
    }
    *maplen = len;
    return base;
}

/* Keeps a freed mapping while the scratch is held; 0 when it was not kept.
 * A piece that touches another (both cut from one mapping) joins it, so the
 * arrays of one stage, freed together, serve a bigger array of the next. */
static int
pool_keep(char *base, size_t maplen)
{
    if (!USE_POOL || pool_holds <= 0) {
        return 0;
    }
    maplen = PAGE_ROUND(maplen);
    for (int k = 0; k < pool_count; k++) {
        if (pool[k].base + pool[k].len == base || base + maplen == pool[k].base) {
            char *start = pool[k].base < base ? pool[k].base : base;
            size_t len = pool[k].len + maplen;
            (void)PyTraceMalloc_Untrack(BIG_TRACE_DOMAIN, (uintptr_t)pool[k].base);
            (void)PyTraceMalloc_Untrack(BIG_TRACE_DOMAIN, (uintptr_t)base);
            pool[k] = pool[--pool_count];
            (void)PyTraceMalloc_Track(BIG_TRACE_DOMAIN, (uintptr_t)start, len);
            return pool_keep(start, len) || (pool_unmap(start, len), 1);
        }
    }
    if (pool_count == POOL_PIECES) {
        return 0;
    }
    pool[pool_count].base = base;
    pool[pool_count].len = maplen;
    pool_count++;
    return 1;
}

static void
pool_flush(void)
{
    while (pool_count > 0) {
        pool_count--;
        pool_unmap(pool[pool_count].base, pool[pool_count].len);
    }
}

static void *
big_alloc(size_t nbytes, int zeroed)
{
    size_t total = nbytes + BIG_HEADER;
    char *base = NULL;
    size_t maplen = 0;
    if (nbytes > PY_SSIZE_T_MAX - BIG_HEADER) {
        PyErr_NoMemory();
        return NULL;
    }
#if USE_POOL
    if (pool_count > 0 && total >= POOL_MIN) {
        base = pool_take(total, &maplen);
        if (base != NULL && zeroed) {
            memset(base, 0, total);
        }
        if (base == NULL && total >= BIG_MAP_MIN) {
            /* Fresh pages now: what is kept goes first, so the memory held never
             * exceeds what freeing at once would hold (the peak a profile sees). */
            pool_flush();
        }
    }
#endif
#if defined(__linux__) && defined(MAP_ANONYMOUS)
    if (base == NULL && total >= BIG_MAP_MIN) {
        void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED) {
#ifdef MADV_HUGEPAGE
            (void)madvise(m, total, MADV_HUGEPAGE); /* a hint: refusal is fine */
#endif
            base = (char *)m; /* anonymous mappings are zero-filled */
            maplen = total;
            (void)PyTraceMalloc_Track(BIG_TRACE_DOMAIN, (uintptr_t)base, total);
        }
    }
#endif
    if (base == NULL) {
        base = (char *)(zeroed ? PyMem_RawCalloc(1, total) : PyMem_RawMalloc(total));
        if (base == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
    }
    ((big_header *)base)->nbytes = nbytes;
    ((big_header *)base)->maplen = maplen;
    return base + BIG_HEADER;
}

static void
big_free(void *data)
{
    if (data == NULL) {
        return;
    }
    char *base = (char *)data - BIG_HEADER;
    size_t maplen = ((big_header *)base)->maplen;
#if defined(__linux__) && defined(MAP_ANONYMOUS)
    if (maplen != 0) {
        if (!pool_keep(base, maplen)) {
            (void)PyTraceMalloc_Untrack(BIG_TRACE_DOMAIN, (uintptr_t)base);
            munmap(base, maplen);
        }
        return;
    }
#endif
    (void)maplen;
    PyMem_RawFree(base);
}

/* realloc() for big arrays; the contents up to the old size are kept. A
 * mapped array is remapped: the kernel moves its pages instead of copying
 * them, so growing never holds the old and the new array at once (at 10
 * references per object that copy was the analysis's peak memory). */
static void *
big_grow(void *data, size_t nbytes)
{
    size_t old = ((big_header *)((char *)data - BIG_HEADER))->nbytes;
#if defined(__linux__) && defined(MREMAP_MAYMOVE)
    char *base = (char *)data - BIG_HEADER;
    size_t maplen = ((big_header *)base)->maplen;
    if (maplen != 0 && nbytes <= PY_SSIZE_T_MAX - BIG_HEADER) {
        size_t total = nbytes + BIG_HEADER;
        void *m = mremap(base, maplen, total, MREMAP_MAYMOVE);
        if (m != MAP_FAILED) {
            (void)PyTraceMalloc_Untrack(BIG_TRACE_DOMAIN, (uintptr_t)base);
#ifdef MADV_HUGEPAGE
            (void)madvise(m, total, MADV_HUGEPAGE);
#endif
            (void)PyTraceMalloc_Track(BIG_TRACE_DOMAIN, (uintptr_t)m, total);
            ((big_header *)m)->nbytes = nbytes;
            ((big_header *)m)->maplen = total;
            return (char *)m + BIG_HEADER;
        }
    }
#endif
    if (((big_header *)((char *)data - BIG_HEADER))->maplen == 0 &&
        (nbytes <= old || nbytes + BIG_HEADER < BIG_MAP_MIN)) {
        /* Stays a heap block: realloc() shrinks in place, and never holds
         * two copies while it can grow in place. */
        char *base = (char *)PyMem_RawRealloc((char *)data - BIG_HEADER, nbytes + BIG_HEADER);
        if (base == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        ((big_header *)base)->nbytes = nbytes;
        return base + BIG_HEADER;
    }
    void *grown = big_alloc(nbytes, 0);
    if (grown == NULL) {
        return NULL;
    }
    memcpy(grown, data, old < nbytes ? old : nbytes);
    big_free(data);
    return grown;
}

/* A read-only buffer that owns one big array: results reach Python as
 * memoryviews over it, without a copy. */
typedef struct {
    PyObject_HEAD
    void *data;
    Py_ssize_t nbytes;
    /* Offsets of a built graph also carry each node's type, as an index into
     * node_type_objects (a tuple): a workspace then marks 10^6 members from
     * this array instead of reading 10^6 object headers (cache misses). */
    uint32_t *node_types;
    Py_ssize_t ntyped;
    PyObject *node_type_objects;
    /* The build that wrote this array as its offsets or targets (0: none). A
     * pair of one build's arrays, read whole, is a valid CSR as built: no pass
     * checks it again (two passes over tens of MiB per call at 10^6 objects). */
    uint64_t build_serial;
} BigArray;

static uint64_t build_serials;
/* Work counted for the tests (see fg_work_counts). */
static uint64_t csr_checks;    /* full CSR checks */
static uint64_t class_lookups; /* edge-class table lookups in edge_classes */
static uint64_t reach_visits;  /* nodes whose edges reach() followed */
static uint64_t peels;         /* acyclic_without calls that peeled */

static void
bigarray_dealloc(PyObject *self)
{
    BigArray *a = (BigArray *)self;
    big_free(a->data);
    big_free(a->node_types);
    Py_XDECREF(a->node_type_objects);
    Py_TYPE(self)->tp_free(self);
}

static int
bigarray_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    BigArray *a = (BigArray *)self;
    return PyBuffer_FillInfo(view, self, a->data, a->nbytes, 1, flags);
}

static PyBufferProcs bigarray_as_buffer = {bigarray_getbuffer, NULL};

static PyTypeObject BigArray_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "whyalive.graph._fastgraph.BigArray",
    .tp_basicsize = sizeof(BigArray),
    .tp_dealloc = bigarray_dealloc,
    .tp_as_buffer = &bigarray_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Read-only array owned by whyalive.graph._fastgraph.",
};

/* Memoryview (cast to fmt unless NULL) that takes over the big array *data;
 * *data is NULL afterwards whether or not this succeeds. */
static PyObject *
view_of(void **data, Py_ssize_t nbytes, const char *fmt)
{
    BigArray *owner = PyObject_New(BigArray, &BigArray_Type);
    if (owner == NULL) {
        big_free(*data);
        *data = NULL;
        return NULL;
    }
    owner->data = *data;
    owner->nbytes = nbytes;
    owner->node_types = NULL;
    owner->ntyped = 0;
    owner->node_type_objects = NULL;
    owner->build_serial = 0;
    *data = NULL;
    PyObject *mv = PyMemoryView_FromObject((PyObject *)owner);
    Py_DECREF(owner);
    if (mv == NULL || fmt == NULL) {
        return mv;
    }
    PyObject *cast = PyObject_CallMethod(mv, "cast", "s", fmt);
    Py_DECREF(mv);
    return cast;
}

/* ------------------------------------------------------------------ */
/* Pointer -> node index open-addressing table (linear probing).       */

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)0)
#endif

/* A slot holds its key: a hit or a miss is decided by the one cache line of
 * the slot, without reading the referent or the node array (at 10^6 objects
 * each of those reads is a cache miss of its own). */
typedef struct {
    PyObject *key; /* NULL: empty */
    int64_t index;
} slot_t;
#define TABLE_MAX_NODES ((Py_ssize_t)UINT32_MAX - 1)

typedef struct {
    slot_t *slots;
    size_t mask;      /* capacity - 1, capacity is a power of two */
    int bits;         /* log2(capacity) */
    int mixing;       /* 0: locality-preserving slots, 1: fully mixed */
    size_t used;
    uint64_t lookups; /* probe accounting, to detect clustering */
    uint64_t probes;
} ptrtable;

static inline size_t
ptr_slot(const ptrtable *t, const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p >> 4; /* object alignment is 16 */
    if (t->mixing) {
        return (size_t)((x * 0x9E3779B97F4A7C15ULL) >> (64 - t->bits));
    }
    /* Objects that refer to each other are usually allocated close together
     * and are traversed roughly in allocation order, so keeping nearby
     * addresses in nearby slots turns most lookups into cache hits; with a
     * mixing hash every lookup was a cache miss and the table dominated.
     * Address windows as large as the table get pseudo-random rotations so
     * that distant arenas do not pile up on the same slots. */
    uint64_t window = x >> t->bits;
    return (size_t)((x + ((window * 0x9E3779B97F4A7C15ULL) >> (64 - t->bits))) & t->mask);
}

static int
table_init(ptrtable *t, size_t min_entries, int mixing)
{
    size_t cap = 16;
    int bits = 4;
    /* Keep load <= 1/2 so probe sequences stay short and an empty slot
     * always exists (table_find relies on that to terminate). */
    while (cap < 2 * min_entries) {
        cap <<= 1;
        bits++;
    }
    t->slots = (slot_t *)big_alloc(cap * sizeof(slot_t), 1);
    if (t->slots == NULL) {
        return -1;
    }
    t->mask = cap - 1;
    t->bits = bits;
    t->mixing = mixing;
    t->used = 0;
    t->lookups = 0;
    t->probes = 0;
    return 0;
}

static void
table_free(ptrtable *t)
{
    big_free(t->slots);
    t->slots = NULL;
}

/* Returns the slot holding key, or the empty slot where it would go. */
static inline slot_t *
table_find(ptrtable *t, PyObject *key)
{
    size_t i = ptr_slot(t, key);
    t->lookups++;
    for (;;) {
        slot_t *s = &t->slots[i];
        if (s->key == key || s->key == NULL) {
            return s;
        }
        t->probes++;
        i = (i + 1) & t->mask;
    }
}

static int
table_rebuild(ptrtable *t, size_t min_entries, int mixing)
{
    ptrtable nt;
    size_t cap = t->mask + 1;
    if (table_init(&nt, min_entries, mixing) < 0) {
        return -1;
    }
    for (size_t i = 0; i < cap; i++) {
        slot_t *s = &t->slots[i];
        if (s->key != NULL) {
            *table_find(&nt, s->key) = *s;
        }
    }
    nt.used = t->used;
    nt.lookups = nt.probes = 0;
    table_free(t);
    *t = nt;
    return 0;
}

#ifndef FG_CLUSTER_SLACK
/* Probes tolerated before giving up on locality; tests build with a huge
 * negative value to force the switch below on the first lookup. */
#define FG_CLUSTER_SLACK 65536
#endif

/* Switches a table to the mixing hash in place: a second table as big would
 * be the biggest allocation of the whole build. Each entry not yet moved is
 * taken out and reinserted at its new home, displacing (and then itself
 * reinserting) any entry not yet moved that sits where it lands; a probe only
 * ever passes entries already moved, so every probe sequence stays unbroken. */
#define SLOT_MOVED ((int64_t)1 << 62)

static void
table_remix(ptrtable *t)
{
    size_t cap = t->mask + 1;
    t->mixing = 1;
    for (size_t i = 0; i < cap; i++) {
        slot_t carry = t->slots[i];
        if (carry.key == NULL || (carry.index & SLOT_MOVED)) {
            continue;
        }
        t->slots[i].key = NULL;
        for (;;) {
            size_t j = ptr_slot(t, carry.key);
            while (t->slots[j].key != NULL && (t->slots[j].index & SLOT_MOVED)) {
                j = (j + 1) & t->mask;
            }
            slot_t displaced = t->slots[j];
            carry.index |= SLOT_MOVED;
            t->slots[j] = carry;
            if (displaced.key == NULL) {
                break;
            }
            carry = displaced;
        }
    }
    for (size_t i = 0; i < cap; i++) {
        t->slots[i].index &= ~SLOT_MOVED;
    }
    t->lookups = t->probes = 0;
}

/* table_find, plus a switch to the mixing hash when addresses turn out to
 * cluster badly (linear probing would then go quadratic), so the worst case
 * stays linear in the number of lookups. */
static inline slot_t *
table_lookup(ptrtable *t, PyObject *key)
{
    slot_t *s = table_find(t, key);
    if (!t->mixing && (int64_t)t->probes > 4 * (int64_t)t->lookups + FG_CLUSTER_SLACK) {
        table_remix(t);
        s = table_find(t, key);
    }
    return s;
}

static int
table_grow(ptrtable *t)
{
    return table_rebuild(t, t->mask + 1, t->mixing); /* doubles capacity */
}

/* ------------------------------------------------------------------ */
/* Small tables: types by index, edge classes by key                    */

static inline size_t
mix64(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x9E3779B97F4A7C15ULL;
    return (size_t)(x ^ (x >> 29));
}

#define CLASS_CAP 15
#define CLASS_EMPTY UINT64_MAX

/* Types by small index, and edge classes by 64-bit key, in open-addressing tables. */
typedef struct {
    PyTypeObject **types;
    size_t ntypes, tcap;
    size_t *tslots; /* index + 1, 0 empty */
    uint64_t *keys; /* CLASS_EMPTY when empty */
    int64_t *ids;
    size_t kcap, nclasses;
} classes_t;

static void
classes_free(classes_t *c)
{
    PyMem_RawFree(c->types);
    PyMem_RawFree(c->tslots);
    PyMem_RawFree(c->keys);
    PyMem_RawFree(c->ids);
    memset(c, 0, sizeof(*c));
}

/* Index of a type, added when new; -1 with MemoryError. */
static int64_t
type_index(classes_t *c, PyTypeObject *tp)
{
    if (2 * (c->ntypes + 1) > c->tcap) {
        size_t ncap = c->tcap ? 2 * c->tcap : 64;
        size_t *slots = (size_t *)PyMem_RawCalloc(ncap, sizeof(size_t));
        PyTypeObject **types = (PyTypeObject **)PyMem_RawRealloc(c->types, ncap / 2 * sizeof(*types));
        if (types != NULL) {
            c->types = types;
        }
        if (slots == NULL || types == NULL) {
            PyMem_RawFree(slots);
            PyErr_NoMemory();
            return -1;
        }
        for (size_t i = 0; i < c->ntypes; i++) {
            size_t h = mix64((uint64_t)(uintptr_t)c->types[i]) & (ncap - 1);
            while (slots[h] != 0) {
                h = (h + 1) & (ncap - 1);
            }
            slots[h] = i + 1;
        }
        PyMem_RawFree(c->tslots);
        c->tslots = slots;
        c->tcap = ncap;
    }
    size_t h = mix64((uint64_t)(uintptr_t)tp) & (c->tcap - 1);
    while (c->tslots[h] != 0) {
        if (c->types[c->tslots[h] - 1] == tp) {
            return (int64_t)(c->tslots[h] - 1);
        }
        h = (h + 1) & (c->tcap - 1);
    }
    c->types[c->ntypes] = tp;
    c->tslots[h] = ++c->ntypes;
    return (int64_t)(c->ntypes - 1);
}

/* ------------------------------------------------------------------ */
/* Graph builder                                                       */

#define TYPE_CACHE_SIZE 64
#define TYPE_SLOT(tp) (((uintptr_t)(tp) >> 4) & (TYPE_CACHE_SIZE - 1))
/* Objects that garbage refers to and that are no node (module globals,
 * classes, names, small ints) recur on almost every node; remembering recent
 * ones keeps their lookups out of the big table, whose slots for far-away
 * addresses are cache misses. */
#define LIVE_CACHE_SIZE 1024
#define LIVE_SLOT(o) (((uintptr_t)(o) >> 4) & (LIVE_CACHE_SIZE - 1))
/* Referents wait in a queue until their table slot, prefetched when they were
 * visited, has arrived in cache: a reference then costs a fraction of a cache
 * miss instead of a whole one. Resolved in visit order, so the result is what
 * resolving each one at once would give. A NULL entry marks where the next
 * node's edges start. */
#define PENDING 32 /* a power of two */
#define LOOKAHEAD 24

/* Alike arrays (see fold_scan): NumPy arrays that own their memory, with no base,
 * that one list, tuple or dict alone holds (a reference count of 1), are counted in C
 * and left out of the graph but for one, which stands for them all: 10^5
 * small arrays are then one node, not 10^5 table entries and descriptions. Read
 * through the head of NumPy's array struct, the part its C API has kept since
 * 1.0 (whyalive.graph.garbage checks it on a probe array before asking). */
typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    intptr_t *dimensions;
    intptr_t *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
} numpy_array_head;

#define NUMPY_OWNDATA 0x0004
/* Fewer alike arrays than this in one container are nodes of their own: a
 * report's table lists each, as it always did. */
#define ALIKE_MIN 512
/* Dtypes counted per container; arrays of further dtypes stay nodes. */
#define ALIKE_DTYPES 8

typedef struct {
    PyObject *descr;    /* borrowed: the arrays hold it */
    PyObject *shape_of; /* borrowed: the first array of this dtype */
    Py_ssize_t count;
    unsigned long long elements;
    int uniform;        /* every one has shape_of's shape */
} alike_dtype;

typedef struct {
    Py_ssize_t container; /* node index */
    PyObject *example;    /* borrowed: the run's node, its array with the most elements */
    Py_ssize_t count;
    unsigned char *positions; /* a bit per item of the container: an alike array */
    Py_ssize_t nitems;
    int ndtypes;
    alike_dtype dtypes[ALIKE_DTYPES];
} alike_run;

typedef struct {
    ptrtable table;
    PyObject **input;     /* the input sequence's items, borrowed (nodes [0, n_input)) */
    PyObject **extras;    /* nodes [n_input, nnodes): strong references */
    int extras_handed;    /* those references now belong to the result list */
    int64_t *offsets;     /* cap_nodes + 1 entries */
    uint32_t *node_types; /* cap_nodes entries: each node's index in types */
    classes_t types;      /* the nodes' types, by index (borrowed: nodes hold them) */
    /* Node types by index, direct-mapped: consecutive nodes alternate between a
     * few types (a tree's nodes and their child lists). */
    PyTypeObject *index_cache_type[TYPE_CACHE_SIZE];
    uint32_t index_cache[TYPE_CACHE_SIZE];
    Py_ssize_t nnodes;
    Py_ssize_t cap_nodes;
    Py_ssize_t n_input;
    Py_ssize_t nstarted;  /* nodes whose first edge is settled (offsets written) */
    int64_t *targets;
    Py_ssize_t ntargets;
    Py_ssize_t cap_targets;
    PyTypeObject **follow; /* follow types, then mark types */
    Py_ssize_t nfollow;
    Py_ssize_t nmark;
    int64_t *marked;       /* indices of nodes of a mark type, ascending */
    Py_ssize_t nmarked;
    Py_ssize_t cap_marked;
    size_t pending_head, pending_tail;
    PyObject *pending[PENDING];
    PyTypeObject *type_cache[TYPE_CACHE_SIZE];
    char type_flags[TYPE_CACHE_SIZE];
    PyObject *live_cache[LIVE_CACHE_SIZE];
    PyTypeObject *array_type; /* NumPy's ndarray when alike arrays are folded, else NULL */
    alike_run *runs;
    Py_ssize_t nruns;
    Py_ssize_t cap_runs;
    char *folded;             /* per item of the container scanned last: folded away */
    Py_ssize_t cap_folded;
    PyObject **values;        /* a dict's values, scanned (borrowed) */
    Py_ssize_t cap_values;
    alike_run *folding;       /* the run of the dict being traversed */
} builder;

#define TYPE_FOLLOWED 1
#define TYPE_MARKED 2

static int
is_subtype_of_any(PyTypeObject *tp, PyTypeObject *const *types, Py_ssize_t count)
{
    for (Py_ssize_t k = 0; k < count; k++) {
        if (types[k] == tp || PyType_IsSubtype(tp, types[k])) {
            return 1;
        }
    }
    return 0;
}

static inline int
type_flags(builder *b, PyTypeObject *tp)
{
    /* Referents outside the garbage are mostly of a handful of types (str,
     * int, code, ...); a direct-mapped cache saves walking their tp_mro for
     * every one.  Types cannot die during the call: their instances are
     * reachable from nodes we hold. */
    size_t h = TYPE_SLOT(tp);
    if (b->type_cache[h] != tp) {
        b->type_cache[h] = tp;
        b->type_flags[h] =
            (char)((is_subtype_of_any(tp, b->follow, b->nfollow) ? TYPE_FOLLOWED : 0) |
                   (is_subtype_of_any(tp, b->follow + b->nfollow, b->nmark) ? TYPE_MARKED : 0));
    }
    return b->type_flags[h];
}

/* *array (PyMem) grown to hold wanted items of size bytes, when *cap is less. */
static int
grow_to(void **array, Py_ssize_t *cap, Py_ssize_t wanted, size_t size)
{
    if (wanted <= *cap) {
        return 0;
    }
    void *grown = PyMem_Realloc(*array, (size_t)wanted * size);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *array = grown;
    *cap = wanted;
    return 0;
}

static int
push_marked(builder *b, Py_ssize_t idx)
{
    if (b->nmarked == b->cap_marked &&
        grow_to((void **)&b->marked, &b->cap_marked, b->cap_marked * 2 + 64, sizeof(int64_t)) < 0) {
        return -1;
    }
    b->marked[b->nmarked++] = (int64_t)idx;
    return 0;
}

/* The targets array full: grown by a quarter, or to what the nodes settled so far
 * predict (plus an eighth): doubling left up to half the array unused, the biggest
 * part of the analysis's peak memory at 10 references per object. Mapped arrays
 * grow by remapping, without a copy. */
static int
grow_targets(builder *b)
{
    Py_ssize_t ncap = b->cap_targets + b->cap_targets / 4 + 64;
    if (b->nstarted >= 64) {
        double predicted = (double)b->ntargets / (double)b->nstarted * (double)b->nnodes;
        predicted += predicted / 8;
        if (predicted > (double)ncap && predicted < (double)(PY_SSIZE_T_MAX / 16)) {
            ncap = (Py_ssize_t)predicted;
        }
    }
    int64_t *nt = (int64_t *)big_grow(b->targets, (size_t)ncap * sizeof(int64_t));
    if (nt == NULL) {
        return -1;
    }
    b->targets = nt;
    b->cap_targets = ncap;
    return 0;
}

/* Every edge passes here: the common case stays inline, the growth apart. */
static inline int
push_target(builder *b, int64_t idx)
{
    if (b->ntargets == b->cap_targets && grow_targets(b) < 0) {
        return -1;
    }
    b->targets[b->ntargets++] = idx;
    return 0;
}

static int
reserve_node(builder *b)
{
    if (b->nnodes == b->cap_nodes) {
        Py_ssize_t ncap = b->cap_nodes * 2 + 64;
        PyObject **nn = (PyObject **)big_grow(b->extras, (size_t)(ncap - b->n_input) * sizeof(PyObject *));
        if (nn == NULL) {
            return -1;
        }
        b->extras = nn;
        int64_t *no = (int64_t *)big_grow(b->offsets, (size_t)(ncap + 1) * sizeof(int64_t));
        if (no == NULL) {
            return -1;
        }
        b->offsets = no;
        uint32_t *nty = (uint32_t *)big_grow(b->node_types, (size_t)ncap * sizeof(uint32_t));
        if (nty == NULL) {
            return -1;
        }
        b->node_types = nty;
        b->cap_nodes = ncap;
    }
    return 0;
}

/* A referent that is no node yet: a live object, or an untracked object of a
 * followed type, added as an extra node. s is the empty slot where it would go. */
static int
resolve_missing(builder *b, PyObject *o, slot_t *s)
{
    /* Tracked objects outside the input are live objects: not part of the
     * captured garbage, so they are neither nodes nor edge targets. Only
     * untracked extras are ever added, so a tracked miss stays a miss, and so
     * does an object of a type that is not followed. */
    if (is_tracked_gc(o) ||
        !(type_flags(b, Py_TYPE(o)) & TYPE_FOLLOWED)) {
        b->live_cache[LIVE_SLOT(o)] = o;
        return 0;
    }
    if (b->nnodes >= TABLE_MAX_NODES) {
        PyErr_SetString(PyExc_MemoryError, "too many objects for one graph");
        return -1;
    }
    if (reserve_node(b) < 0) {
        return -1;
    }
    if ((b->table.used + 1) * 2 > b->table.mask + 1) {
        if (table_grow(&b->table) < 0) {
            return -1;
        }
        s = table_find(&b->table, o);
    }
    int64_t idx = (int64_t)b->nnodes;
    Py_INCREF(o);
    b->extras[b->nnodes++ - b->n_input] = o;
    s->key = o;
    s->index = idx;
    b->table.used++;
    return push_target(b, idx);
}

/* The edge to referent o, if o is a node or becomes one. */
static inline int
resolve_referent(builder *b, PyObject *o)
{
    slot_t *s = table_lookup(&b->table, o);
    if (s->key == o) {
        return push_target(b, s->index);
    }
    return resolve_missing(b, o, s);
}

/* Settles the oldest queued referent (or node start). */
static inline int
resolve_pending(builder *b)
{
    PyObject *o = b->pending[b->pending_tail++ & (PENDING - 1)];
    if (o == NULL) {
        b->offsets[b->nstarted++] = (int64_t)b->ntargets;
        return 0;
    }
    return resolve_referent(b, o);
}

static int
resolve_all(builder *b)
{
    while (b->pending_tail != b->pending_head) {
        if (resolve_pending(b) < 0) {
            return -1;
        }
    }
    return 0;
}

static inline int
enqueue(builder *b, PyObject *o)
{
    b->pending[b->pending_head++ & (PENDING - 1)] = o;
    if (b->pending_head - b->pending_tail > LOOKAHEAD) {
        return resolve_pending(b);
    }
    return 0;
}

static int visit_referent(PyObject *o, void *arg);

static inline int
is_private_array(const builder *b, PyObject *o)
{
    const numpy_array_head *a = (const numpy_array_head *)o;
    return o != NULL && Py_TYPE(o) == b->array_type && Py_REFCNT(o) == 1 && a->base == NULL &&
           (a->flags & NUMPY_OWNDATA) != 0;
}

static inline int
same_shape(const numpy_array_head *a, const numpy_array_head *c)
{
    if (a->nd != c->nd) {
        return 0;
    }
    for (int k = 0; k < a->nd; k++) {
        if (a->dimensions[k] != c->dimensions[k]) {
            return 0;
        }
    }
    return 1;
}

/* The slot of run equal to dtype descr, else -1. Equal dtypes share a slot: NumPy
 * makes a new dtype object for each array of some dtypes (strings, structured,
 * datetimes). Their comparison is NumPy's C code. */
static int
equal_dtype(const alike_run *run, PyObject *descr)
{
    for (int k = 0; k < run->ndtypes; k++) {
        int equal = PyObject_RichCompareBool(run->dtypes[k].descr, descr, Py_EQ);
        if (equal < 0) {
            PyErr_Clear();
        }
        if (equal > 0) {
            return k;
        }
    }
    return -1;
}

/* The slot of run for dtype descr, else -1; the same object is found without a
 * comparison (the usual case, inlined). */
static inline int
known_dtype(const alike_run *run, PyObject *descr)
{
    for (int k = 0; k < run->ndtypes; k++) {
        if (run->dtypes[k].descr == descr) {
            return k;
        }
    }
    return equal_dtype(run, descr);
}

/* The slot of run for descr, a new one (item's shape its first) while there is
 * room, else -1. */
static inline int
dtype_slot(alike_run *run, PyObject *descr, PyObject *item)
{
    int slot = known_dtype(run, descr);
    if (slot >= 0 || run->ndtypes == ALIKE_DTYPES) {
        return slot;
    }
    alike_dtype *d = &run->dtypes[run->ndtypes];
    d->descr = descr;
    d->shape_of = item;
    d->uniform = 1;
    return run->ndtypes++;
}

/* Counts the alike arrays among a container's items (a dict's values) into run,
 * each flagged in folded but its example (the one with the most elements, the
 * first of them); true when they are enough to fold. */
static int
fold_scan(const builder *b, PyObject **items, Py_ssize_t n, char *folded, alike_run *run)
{
    unsigned long long most = 0;
    Py_ssize_t example_at = -1;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *item = items[k];
        folded[k] = 0;
        /* An array's head spans two cache lines and its shape a third: asked for
         * ahead, the misses of several arrays overlap. */
        if (k + 16 < n && items[k + 16] != NULL) {
            PREFETCH(items[k + 16]);
            PREFETCH((char *)items[k + 16] + 64);
        }
        if (k + 8 < n && items[k + 8] != NULL && Py_TYPE(items[k + 8]) == b->array_type) {
            PREFETCH(((numpy_array_head *)items[k + 8])->dimensions);
        }
        if (!is_private_array(b, item)) {
            continue;
        }
        const numpy_array_head *a = (const numpy_array_head *)item;
        int slot = dtype_slot(run, a->descr, item);
        if (slot < 0) {
            continue;
        }
        alike_dtype *d = &run->dtypes[slot];
        unsigned long long elements = 1;
        for (int j = 0; j < a->nd; j++) {
            elements *= (unsigned long long)a->dimensions[j];
        }
        d->elements += elements;
        d->count++;
        if (d->uniform && !same_shape(a, (const numpy_array_head *)d->shape_of)) {
            d->uniform = 0;
        }
        if (example_at < 0 || elements > most) {
            most = elements;
            example_at = k;
        }
        folded[k] = 1;
        run->count++;
    }
    if (run->count < ALIKE_MIN) {
        return 0;
    }
    run->example = items[example_at];
    folded[example_at] = 0;
    return 1;
}

/* Whether a dict's value o is one its run's example stands for (what fold_scan
 * flagged: the run's dtype slots are final, and no count has changed since). */
static int
folded_value(const builder *b, const alike_run *run, PyObject *o)
{
    return o != run->example && is_private_array(b, o) &&
           known_dtype(run, ((const numpy_array_head *)o)->descr) >= 0;
}

static int
visit_unfolded(PyObject *o, void *arg)
{
    builder *b = (builder *)arg;
    if (o != NULL && folded_value(b, b->folding, o)) {
        return 0;
    }
    return visit_referent(o, arg);
}

/* Node i's referents when it is a list, tuple or dict with enough alike arrays to
 * fold (1), else 0 and nothing done: what its tp_traverse visits, but for the arrays
 * that its run's example stands for. A list's or tuple's items are visited here, last
 * first as their tp_traverse does, without reading them again. A repeated input
 * object folds at its first index only, where the twin folds it too. */
static int
fold_container(builder *b, PyObject *o, Py_ssize_t i)
{
    int is_dict = PyDict_CheckExact(o);
    if ((is_dict ? PyDict_GET_SIZE(o) : Py_SIZE(o)) < ALIKE_MIN) {
        return 0;
    }
    if (i < b->n_input && table_lookup(&b->table, o)->index != i) {
        return 0;
    }
    Py_ssize_t n = is_dict ? PyDict_GET_SIZE(o) : Py_SIZE(o);
    if (grow_to((void **)&b->folded, &b->cap_folded, n, 1) < 0 ||
        (is_dict && grow_to((void **)&b->values, &b->cap_values, n, sizeof(PyObject *)) < 0)) {
        return -1;
    }
    PyObject **items;
    if (is_dict) { /* its values in order, borrowed; PyDict_Next runs no Python code */
        Py_ssize_t at = 0, k = 0;
        PyObject *key, *value;
        while (k < n && PyDict_Next(o, &at, &key, &value)) {
            b->values[k++] = value;
        }
        n = k;
        items = b->values;
    } else {
        items = PyList_CheckExact(o) ? ((PyListObject *)o)->ob_item
                                     : ((PyTupleObject *)o)->ob_item;
    }
    if (b->nruns == b->cap_runs &&
        grow_to((void **)&b->runs, &b->cap_runs, b->cap_runs * 2 + 4, sizeof(alike_run)) < 0) {
        return -1;
    }
    alike_run *run = &b->runs[b->nruns];
    memset(run, 0, sizeof(*run));
    if (!fold_scan(b, items, n, b->folded, run)) {
        return 0;
    }
    run->positions = (unsigned char *)PyMem_Calloc((size_t)(n + 7) / 8, 1);
    if (run->positions == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    run->container = i;
    run->nitems = n;
    b->nruns++;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (b->folded[k] || items[k] == run->example) {
            run->positions[k >> 3] |= (unsigned char)(1u << (k & 7));
        }
    }
    if (is_dict) {
        b->folding = run;
        int failed = Py_TYPE(o)->tp_traverse(o, visit_unfolded, b) != 0;
        b->folding = NULL;
        return failed ? -1 : 1;
    }
    for (Py_ssize_t k = n - 1; k >= 0; k--) {
        if (!b->folded[k] && items[k] != NULL && visit_referent(items[k], b) != 0) {
            return -1;
        }
    }
    return 1;
}

/* Every node passes here: only lists, tuples and dicts (when arrays are folded at
 * all) go on to fold_container. */
static inline int
fold_visit(builder *b, PyObject *o, Py_ssize_t i)
{
    PyTypeObject *tp = Py_TYPE(o);
    if (b->array_type == NULL || (tp != &PyList_Type && tp != &PyTuple_Type && tp != &PyDict_Type)) {
        return 0;
    }
    return fold_container(b, o, i);
}

/* An array's shape as a tuple of ints. */
static PyObject *
shape_tuple(const numpy_array_head *a)
{
    PyObject *shape = PyTuple_New(a->nd);
    for (int j = 0; shape != NULL && j < a->nd; j++) {
        PyObject *dim = PyLong_FromSsize_t((Py_ssize_t)a->dimensions[j]);
        if (dim == NULL) {
            Py_CLEAR(shape);
            break;
        }
        PyTuple_SET_ITEM(shape, j, dim);
    }
    return shape;
}

/* The runs as Python tuples, appended to out: (node, container, count, positions
 * (a bit per item, little-endian), ((dtype, count, elements, shape or None), ...)). */
static int
runs_to_python(builder *b, PyObject *out)
{
    for (Py_ssize_t r = 0; r < b->nruns; r++) {
        alike_run *run = &b->runs[r];
        slot_t *s = table_lookup(&b->table, run->example);
        if (s->key != run->example) {
            PyErr_SetString(PyExc_RuntimeError, "an alike array is no node");
            return -1;
        }
        PyObject *dtypes = PyTuple_New(run->ndtypes);
        if (dtypes == NULL) {
            return -1;
        }
        for (int k = 0; k < run->ndtypes; k++) {
            alike_dtype *d = &run->dtypes[k];
            PyObject *shape;
            if (!d->uniform) {
                Py_INCREF(Py_None);
                shape = Py_None;
            } else {
                shape = shape_tuple((const numpy_array_head *)d->shape_of);
            }
            PyObject *entry = shape == NULL ? NULL
                                            : Py_BuildValue("(OnKN)", d->descr, d->count,
                                                            d->elements, shape);
            if (entry == NULL) {
                Py_DECREF(dtypes);
                return -1;
            }
            PyTuple_SET_ITEM(dtypes, k, entry);
        }
        PyObject *record = Py_BuildValue("(nnny#N)", (Py_ssize_t)s->index, run->container,
                                         run->count, (const char *)run->positions,
                                         (run->nitems + 7) / 8, dtypes);
        if (record == NULL || PyList_Append(out, record) < 0) {
            Py_XDECREF(record);
            return -1;
        }
        Py_DECREF(record);
    }
    return 0;
}

static int
visit_referent(PyObject *o, void *arg)
{
    builder *b = (builder *)arg;
    if (o == NULL || b->live_cache[LIVE_SLOT(o)] == o) {
        return 0;
    }
    PREFETCH(&b->table.slots[ptr_slot(&b->table, o)]);
    return enqueue(b, o);
}

static void
builder_release(builder *b)
{
    Py_ssize_t i;
    if (b->extras != NULL && !b->extras_handed) {
        for (i = b->n_input; i < b->nnodes; i++) {
            Py_DECREF(b->extras[i - b->n_input]);
        }
    }
    big_free(b->extras);
    big_free(b->offsets);
    big_free(b->node_types);
    classes_free(&b->types);
    big_free(b->targets);
    PyMem_Free(b->follow);
    PyMem_Free(b->marked);
    for (Py_ssize_t r = 0; r < b->nruns; r++) {
        PyMem_Free(b->runs[r].positions);
    }
    PyMem_Free(b->runs);
    PyMem_Free(b->folded);
    PyMem_Free(b->values);
    table_free(&b->table);
    memset(b, 0, sizeof(*b));
}

static int
check_types(PyObject *types, const char *name)
{
    if (PyTuple_Check(types)) {
        Py_ssize_t i;
        for (i = 0; i < PyTuple_GET_SIZE(types) && PyType_Check(PyTuple_GET_ITEM(types, i)); i++) {
        }
        if (i == PyTuple_GET_SIZE(types)) {
            return 0;
        }
    }
    PyErr_Format(PyExc_TypeError, "%s must be a tuple of types", name);
    return -1;
}

/* The offsets as a memoryview whose array also carries the node types (see
 * BigArray); without the types when they cannot be handed over. */
static PyObject *
offsets_with_types(builder *b)
{
    PyObject *types = PyTuple_New((Py_ssize_t)b->types.ntypes);
    if (types == NULL) {
        return NULL;
    }
    for (size_t k = 0; k < b->types.ntypes; k++) {
        Py_INCREF(b->types.types[k]);
        PyTuple_SET_ITEM(types, (Py_ssize_t)k, (PyObject *)b->types.types[k]);
    }
    BigArray *owner = PyObject_New(BigArray, &BigArray_Type);
    if (owner == NULL) {
        Py_DECREF(types);
        return NULL;
    }
    owner->data = b->offsets;
    owner->nbytes = (b->nnodes + 1) * (Py_ssize_t)sizeof(int64_t);
    owner->node_types = b->node_types;
    owner->ntyped = b->nnodes;
    owner->node_type_objects = types;
    owner->build_serial = 0;
    b->offsets = NULL;
    b->node_types = NULL;
    PyObject *mv = PyMemoryView_FromObject((PyObject *)owner);
    Py_DECREF(owner);
    if (mv == NULL) {
        return NULL;
    }
    PyObject *cast = PyObject_CallMethod(mv, "cast", "s", "q");
    Py_DECREF(mv);
    return cast;
}

/* in_place: objects is a list that becomes the node list, the extras appended
 * to it, so its 10^6 items are neither increfed into a new list nor decrefed
 * out of it (each a write to an object's header, a cache miss). */
static PyObject *
build_graph_impl(PyObject *objects, PyObject *follow_types, PyObject *mark_types, int in_place,
                 PyTypeObject *array_type, PyObject *runs_out)
{
    builder b;
    PyObject *seq = NULL, *nodes_list = NULL, *offsets_mv = NULL, *targets_mv = NULL;
    PyObject *marked_list = NULL, *result = NULL;
    Py_ssize_t i, n;

    memset(&b, 0, sizeof(b));
    if (check_types(follow_types, "follow_types") < 0 || check_types(mark_types, "mark_types") < 0) {
        return NULL;
    }
    seq = PySequence_Fast(objects, "objects must be a sequence");
    if (seq == NULL) {
        return NULL;
    }
    n = PySequence_Fast_GET_SIZE(seq);

    b.array_type = array_type;
    b.nfollow = PyTuple_GET_SIZE(follow_types);
    b.nmark = PyTuple_GET_SIZE(mark_types);
    b.follow = (PyTypeObject **)PyMem_Malloc((size_t)(b.nfollow + b.nmark + 1) *
                                             sizeof(PyTypeObject *));
    if (b.follow == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (i = 0; i < b.nfollow; i++) {
        b.follow[i] = (PyTypeObject *)PyTuple_GET_ITEM(follow_types, i);
    }
    for (i = 0; i < b.nmark; i++) {
        b.follow[b.nfollow + i] = (PyTypeObject *)PyTuple_GET_ITEM(mark_types, i);
    }

    if (n > TABLE_MAX_NODES) {
        PyErr_SetString(PyExc_MemoryError, "too many objects for one graph");
        goto done;
    }
    if (table_init(&b.table, (size_t)n, 0) < 0) {
        goto done;
    }
    b.cap_nodes = n + n / 8 + 64;
    /* The input's own items are the first nodes: a copy of 10^6 pointers
     * would be megabytes of fresh memory (page faults) and a pass over them. */
    b.extras = (PyObject **)big_alloc((size_t)(b.cap_nodes - n) * sizeof(PyObject *), 0);
    b.offsets = (int64_t *)big_alloc((size_t)(b.cap_nodes + 1) * sizeof(int64_t), 0);
    b.node_types = (uint32_t *)big_alloc((size_t)b.cap_nodes * sizeof(uint32_t), 0);
    b.cap_targets = 2 * n + 64;
    b.targets = (int64_t *)big_alloc((size_t)b.cap_targets * sizeof(int64_t), 0);
    if (b.extras == NULL || b.offsets == NULL || b.node_types == NULL || b.targets == NULL) {
        goto done;
    }
    {
        PyObject **items = PySequence_Fast_ITEMS(seq);
        b.input = items;
        for (i = 0; i < n; i++) {
            PyObject *o = items[i];
            slot_t *s = table_lookup(&b.table, o);
            /* A repeated input object keeps its first index; later copies are
             * still nodes (so indices match the input) but nothing points at them. */
            if (s->key == NULL) {
                s->key = o;
                s->index = i;
                b.table.used++;
            }
        }
        b.nnodes = n;
        b.n_input = n;
    }

    {
        int failed = 0;
        for (i = 0;; i++) {
            /* Queued referents can still add extra nodes. */
            if (i == b.nnodes) {
                if (resolve_all(&b) < 0) {
                    failed = 1;
                    break;
                }
                if (i == b.nnodes) {
                    break;
                }
            }
            PyObject *o = i < b.n_input ? b.input[i] : b.extras[i - b.n_input];
            if (i + 8 < b.n_input) {
                PREFETCH(b.input[i + 8]);
            }
            if (enqueue(&b, NULL) < 0) {
                failed = 1;
                break;
            }
            PyTypeObject *tp = Py_TYPE(o);
            size_t h = TYPE_SLOT(tp);
            if (b.index_cache_type[h] != tp) {
                int64_t t = type_index(&b.types, tp);
                if (t < 0) {
                    failed = 1;
                    break;
                }
                b.index_cache_type[h] = tp;
                b.index_cache[h] = (uint32_t)t;
            }
            b.node_types[i] = b.index_cache[h];
            /* The type is read here anyway: selecting marked nodes now saves
             * the caller a pass that would miss the cache on every object. */
            if (b.nmark > 0 && (type_flags(&b, Py_TYPE(o)) & TYPE_MARKED) && push_marked(&b, i) < 0) {
                failed = 1;
                break;
            }
            if (is_gc_object(o)) {
                traverseproc trav = Py_TYPE(o)->tp_traverse;
                int folded = fold_visit(&b, o, i);
                if (folded < 0) {
                    failed = 1;
                    break;
                }
                if (!folded && trav != NULL && trav(o, visit_referent, &b) != 0) {
                    if (!PyErr_Occurred()) {
                        PyErr_SetString(PyExc_RuntimeError, "tp_traverse failed");
                    }
                    failed = 1;
                    break;
                }
            }
        }
        if (!failed) {
            b.offsets[b.nnodes] = (int64_t)b.ntargets;
            if (runs_out != NULL && runs_to_python(&b, runs_out) < 0) {
                failed = 1;
            }
        }
        if (!failed) {
            /* What the analysis keeps is exactly as big as the graph, and the
             * table goes before the node list comes: the peak stays that of
             * the build. A failed shrink keeps the bigger array. */
            table_free(&b.table);
            int64_t *fitted = (int64_t *)big_grow(b.targets, ((size_t)b.ntargets + 1) * sizeof(int64_t));
            if (fitted != NULL) {
                b.targets = fitted;
            } else {
                PyErr_Clear();
            }
            if (in_place) {
                /* No Python code ran since PySequence_Fast: the list still holds
                 * exactly the input. Our references to the extras are dropped by
                 * builder_release; the list takes its own. */
                nodes_list = seq;
                Py_INCREF(nodes_list);
                for (i = b.n_input; i < b.nnodes; i++) {
                    if (PyList_Append(nodes_list, b.extras[i - b.n_input]) < 0) {
                        (void)PyList_SetSlice(nodes_list, b.n_input, PyList_GET_SIZE(nodes_list),
                                              NULL);
                        Py_CLEAR(nodes_list);
                        break;
                    }
                }
            } else {
                nodes_list = PyList_New(b.nnodes);
            }
            if (nodes_list != NULL && !in_place) {
                for (i = 0; i < b.n_input; i++) {
                    Py_INCREF(b.input[i]);
                    PyList_SET_ITEM(nodes_list, i, b.input[i]);
                }
                /* Hand our strong references to the extras over to the list. */
                for (i = b.n_input; i < b.nnodes; i++) {
                    PyList_SET_ITEM(nodes_list, i, b.extras[i - b.n_input]);
                }
                b.extras_handed = 1;
            }
            if (nodes_list != NULL) {
                offsets_mv = offsets_with_types(&b);
                if (offsets_mv != NULL) {
                    targets_mv = view_of((void **)&b.targets,
                                         b.ntargets * (Py_ssize_t)sizeof(int64_t), "q");
                }
                if (targets_mv != NULL) {
                    uint64_t serial = ++build_serials;
                    ((BigArray *)PyMemoryView_GET_BASE(offsets_mv))->build_serial = serial;
                    ((BigArray *)PyMemoryView_GET_BASE(targets_mv))->build_serial = serial;
                    marked_list = PyList_New(b.nmarked);
                }
                for (i = 0; marked_list != NULL && i < b.nmarked; i++) {
                    PyObject *index = PyLong_FromLongLong((long long)b.marked[i]);
                    if (index == NULL) {
                        Py_CLEAR(marked_list);
                        break;
                    }
                    PyList_SET_ITEM(marked_list, i, index);
                }
                if (marked_list != NULL) {
                    result = PyTuple_Pack(4, nodes_list, offsets_mv, targets_mv, marked_list);
                }
                if (result == NULL && in_place) {
                    /* The caller's list goes back to what it was. */
                    (void)PyList_SetSlice(nodes_list, b.n_input, PyList_GET_SIZE(nodes_list), NULL);
                }
            }
        }
    }

done:
    Py_XDECREF(nodes_list);
    Py_XDECREF(offsets_mv);
    Py_XDECREF(targets_mv);
    Py_XDECREF(marked_list);
    builder_release(&b);
    Py_DECREF(seq);
    return result;
}

static PyObject *
fg_build_graph(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs < 3 || nargs > 6) {
        PyErr_SetString(PyExc_TypeError,
                        "build_graph(objects, follow_types, mark_types, in_place=False, "
                        "array_type=None, runs=None) takes 3 to 6 arguments");
        return NULL;
    }
    int in_place = 0;
    if (nargs >= 4) {
        in_place = PyObject_IsTrue(args[3]);
        if (in_place < 0) {
            return NULL;
        }
        if (in_place && !PyList_CheckExact(args[0])) {
            PyErr_SetString(PyExc_TypeError, "in_place needs objects to be a list");
            return NULL;
        }
    }
    PyTypeObject *array_type = NULL;
    PyObject *runs = NULL;
    if (nargs >= 5 && args[4] != Py_None) {
        if (nargs < 6 || !PyType_Check(args[4]) || !PyList_CheckExact(args[5]) ||
            args[5] == args[0] ||
            ((PyTypeObject *)args[4])->tp_basicsize < (Py_ssize_t)sizeof(numpy_array_head)) {
            PyErr_SetString(PyExc_TypeError,
                            "array_type must be NumPy's ndarray, with runs a list of its own");
            return NULL;
        }
        array_type = (PyTypeObject *)args[4];
        runs = args[5];
    }
    /* Off for the whole call: PySequence_Fast, the result list and the byte
     * buffers allocate, and a collection could run finalizers, grow gc.garbage
     * or free objects while we hold raw pointers to them. */
    int was_enabled = PyGC_Disable();
    PyObject *result = build_graph_impl(args[0], args[1], args[2], in_place, array_type, runs);
    if (was_enabled) {
        PyGC_Enable();
    }
    return result;
}

/* node_types(offsets) -> tuple | None: the distinct types of a built graph's
 * nodes, which build_graph recorded with its offsets (None for other offsets):
 * what a pass over 10^3..10^6 objects' types would find. */
static PyObject *
fg_node_types(PyObject *self, PyObject *offsets)
{
    (void)self;
    if (PyMemoryView_Check(offsets)) {
        PyObject *base = PyMemoryView_GET_BASE(offsets);
        if (base != NULL && Py_IS_TYPE(base, &BigArray_Type)) {
            PyObject *types = ((BigArray *)base)->node_type_objects;
            if (types != NULL && ((BigArray *)base)->node_types != NULL) {
                return Py_NewRef(types);
            }
        }
    }
    Py_RETURN_NONE;
}

/* array_head(array) -> (nd, shape, has_base, owns_data, dtype): what the graph
 * builder reads of an array, for a check against NumPy's own answers. */
static PyObject *
fg_array_head(PyObject *self, PyObject *arg)
{
    (void)self;
    if (Py_TYPE(arg)->tp_basicsize < (Py_ssize_t)sizeof(numpy_array_head)) {
        PyErr_SetString(PyExc_TypeError, "array_head needs an object as big as an array's head");
        return NULL;
    }
    const numpy_array_head *a = (const numpy_array_head *)arg;
    if (a->nd < 0 || a->nd > 64) {
        return Py_BuildValue("(iOOOO)", a->nd, Py_None, Py_None, Py_None, Py_None);
    }
    PyObject *shape = shape_tuple(a);
    if (shape == NULL) {
        return NULL;
    }
    return Py_BuildValue("(iNOOO)", a->nd, shape, a->base != NULL ? Py_True : Py_False,
                         (a->flags & NUMPY_OWNDATA) ? Py_True : Py_False,
                         a->descr != NULL ? a->descr : Py_None);
}

/* ------------------------------------------------------------------ */
/* CSR input validation                                                */

static int
get_i64_buffer(PyObject *obj, Py_buffer *view, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        return -1;
    }
    const char *f = view->format ? view->format : "B";
    if (*f == '@' || *f == '=') {
        f++;
    }
    if (view->itemsize != 8 || view->ndim != 1 || !(f[0] == 'q' || f[0] == 'l' || f[0] == 'n') ||
        f[1] != '\0') {
        PyErr_Format(PyExc_TypeError, "%s must be a 1-d buffer of int64 (format 'q')", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

typedef struct {
    Py_buffer ob, tb;
    const int64_t *off;
    const int64_t *tgt;
    Py_ssize_t n; /* node count */
    Py_ssize_t m; /* edge count */
} csr_t;

static void
csr_release(csr_t *g)
{
    PyBuffer_Release(&g->ob);
    PyBuffer_Release(&g->tb);
}

/* Whether offsets and targets are one build's arrays, each read whole. */
static int
built_pair(const csr_t *g, PyObject *offsets, PyObject *targets)
{
    if (!PyMemoryView_Check(offsets) || !PyMemoryView_Check(targets)) {
        return 0;
    }
    PyObject *ob = PyMemoryView_GET_BASE(offsets), *tb = PyMemoryView_GET_BASE(targets);
    if (ob == NULL || tb == NULL || !Py_IS_TYPE(ob, &BigArray_Type) ||
        !Py_IS_TYPE(tb, &BigArray_Type)) {
        return 0;
    }
    const BigArray *oa = (const BigArray *)ob, *ta = (const BigArray *)tb;
    return oa->build_serial != 0 && oa->build_serial == ta->build_serial &&
           g->ob.buf == oa->data && g->ob.len == oa->nbytes && g->tb.buf == ta->data &&
           g->tb.len == ta->nbytes;
}

/* Checks every invariant the algorithms rely on, so malformed input raises
 * ValueError instead of reading out of bounds (a build's own pair holds them). */
static int
csr_open(csr_t *g, PyObject *offsets, PyObject *targets)
{
    Py_ssize_t i;
    if (get_i64_buffer(offsets, &g->ob, "offsets") < 0) {
        return -1;
    }
    if (get_i64_buffer(targets, &g->tb, "targets") < 0) {
        PyBuffer_Release(&g->ob);
        return -1;
    }
    g->off = (const int64_t *)g->ob.buf;
    g->tgt = (const int64_t *)g->tb.buf;
    g->n = g->ob.len / 8 - 1;
    g->m = g->tb.len / 8;
    if (built_pair(g, offsets, targets)) {
        return 0;
    }
    csr_checks++;
    if (g->n < 0) {
        PyErr_SetString(PyExc_ValueError, "offsets must have at least one entry");
        goto fail;
    }
    if (g->off[0] != 0 || g->off[g->n] != (int64_t)g->m) {
        PyErr_SetString(PyExc_ValueError, "offsets must start at 0 and end at len(targets)");
        goto fail;
    }
    for (i = 0; i < g->n; i++) {
        if (g->off[i] > g->off[i + 1]) {
            PyErr_SetString(PyExc_ValueError, "offsets must be non-decreasing");
            goto fail;
        }
    }
    for (i = 0; i < g->m; i++) {
        if (g->tgt[i] < 0 || g->tgt[i] >= (int64_t)g->n) {
            PyErr_SetString(PyExc_ValueError, "targets must be node indices in range(len(offsets) - 1)");
            goto fail;
        }
    }
    return 0;
fail:
    csr_release(g);
    return -1;
}

/* ------------------------------------------------------------------ */
/* Strongly connected components: iterative Tarjan                     */

/* Components of g, and with seed flags per node also which components reach
 * a seed. Tarjan completes a component only after every component it has an
 * edge to, so "reaches a seed" is settled at completion from the members'
 * own edges: no reverse graph (tens of MiB at 10^6 objects) is needed. */
typedef struct {
    int64_t *comp;   /* component of each node; n entries */
    uint8_t *cyclic; /* per component: more than one node, or a self-edge */
    uint8_t *reach;  /* per component, only with seeds: reaches a seed */
    int64_t ncomp;
} sccs_t;

static void
sccs_free(sccs_t *s)
{
    big_free(s->comp);
    big_free(s->cyclic);
    big_free(s->reach);
    memset(s, 0, sizeof(*s));
}

/* Tarjan's order numbers start at 1 (0: not seen yet); a completed node's
 * number is replaced by one of these, bigger than any order number, so a
 * single read of it per edge tells all the search needs: unseen, on the
 * stack (and how early), or completed (and whether its component reaches a
 * seed). */
#define SCC_DONE (UINT32_MAX - 1)
#define SCC_DONE_REACHES UINT32_MAX
#define SCC_MAX_NODES ((Py_ssize_t)UINT32_MAX - 3)
/* Flags of a node being searched, and of the component it is in. */
#define SCC_REACHES 1 /* a seed, or an edge into a completed component that reaches one */
#define SCC_SELF 2    /* a self-edge */

/* A suspended node of the search: where its edges resume, and its low-link (its
 * flags are frame_flags[] at the same depth). */
typedef struct {
    int64_t edge;
    uint32_t node;
    uint32_t low;
} scc_frame;

static int
compute_sccs(const csr_t *g, const uint8_t *seed, sccs_t *out)
{
    Py_ssize_t n = g->n, sp = 0, csp = 0;
    uint32_t counter = 0;
    int64_t ncomp = 0;
    const int64_t *off = g->off, *tgt = g->tgt;
    size_t sz = (size_t)(n + 1) * sizeof(uint32_t);
    int ok = 0;
    memset(out, 0, sizeof(*out));
    if (n > SCC_MAX_NODES) {
        PyErr_SetString(PyExc_MemoryError, "too many nodes for one graph (at most 2**32 - 3)");
        return -1;
    }
    /* The biggest arrays first: kept pieces then serve them before they are cut
     * for the smaller ones (see pool_take). */
    scc_frame *frames = (scc_frame *)big_alloc((size_t)(n + 1) * sizeof(scc_frame), 0);
    int64_t *comp = (int64_t *)big_alloc((size_t)(n + 1) * sizeof(int64_t), 0);
    uint32_t *index = (uint32_t *)big_alloc(sz, 1);
    uint32_t *stack = (uint32_t *)big_alloc(sz, 0);
    uint8_t *frame_flags = (uint8_t *)big_alloc((size_t)n + 1, 0);
    /* At most n components; mapped memory costs only the pages touched. */
    uint8_t *cyclic = (uint8_t *)big_alloc((size_t)n + 1, 1);
    uint8_t *reach = seed != NULL ? (uint8_t *)big_alloc((size_t)n + 1, 1) : NULL;
    if (!frames || !comp || !index || !stack || !frame_flags || !cyclic || (seed && !reach)) {
        goto done;
    }
    /* The node searched stays in registers (u, its next edge e, its low-link lu and
     * flags fu); it goes to frames only when the search descends from it. A chain of
     * 10^6 nodes is then one load of the next node's edges per step, not a round
     * trip of the whole frame through memory. A node's flags pass to its parent
     * when it returns without closing a component: the two are in one component
     * (all the tree path from a component's root to its members is in it), so at
     * the root fu holds the flags of all its members. */
    for (Py_ssize_t root = 0; root < n; root++) {
        if (index[root] != 0) {
            continue;
        }
        uint32_t u = (uint32_t)root;
        int64_t e = off[u], end = off[u + 1];
        uint32_t lu = ++counter;
        uint8_t fu = seed != NULL && seed[u] ? SCC_REACHES : 0;
        index[u] = lu;
        stack[sp++] = u;
        for (;;) {
            for (; e < end; e++) {
                if (e + 8 < end) {
                    PREFETCH(&index[tgt[e + 8]]);
                }
                uint32_t w = (uint32_t)tgt[e];
                uint32_t x = index[w];
                if (x == 0) {
                    frames[csp].edge = e + 1;
                    frames[csp].node = u;
                    frames[csp].low = lu;
                    frame_flags[csp] = fu;
                    csp++;
                    u = w;
                    e = off[w];
                    end = off[w + 1];
                    lu = ++counter;
                    fu = seed != NULL && seed[w] ? SCC_REACHES : 0;
                    index[w] = lu;
                    stack[sp++] = w;
                    e--; /* the loop's e++ */
                    continue;
                }
                if (x < lu) {
                    lu = x;
                } else if (x == SCC_DONE_REACHES) {
                    fu |= SCC_REACHES;
                }
                if (w == u) {
                    fu |= SCC_SELF;
                }
            }
            int closes = lu == index[u];
            if (closes) {
                Py_ssize_t top = sp;
                uint32_t done = (fu & SCC_REACHES) ? SCC_DONE_REACHES : SCC_DONE;
                uint32_t w;
                do {
                    w = stack[--sp];
                    comp[w] = ncomp;
                    index[w] = done;
                } while (w != u);
                cyclic[ncomp] = top - sp > 1 || (fu & SCC_SELF);
                if (reach != NULL) {
                    reach[ncomp] = fu & SCC_REACHES;
                }
                ncomp++;
            }
            if (csp == 0) {
                break;
            }
            /* Back to the parent, with what the child tells it. */
            csp--;
            uint32_t child_low = lu;
            uint8_t child_flags = fu;
            u = frames[csp].node;
            e = frames[csp].edge;
            lu = frames[csp].low;
            fu = frame_flags[csp];
            end = off[u + 1];
            if (!closes) {
                fu |= child_flags;
                if (child_low < lu) {
                    lu = child_low;
                }
            } else if (child_flags & SCC_REACHES) {
                fu |= SCC_REACHES;
            }
        }
    }
    out->comp = comp;
    out->cyclic = cyclic;
    out->reach = reach;
    out->ncomp = ncomp;
    comp = NULL;
    cyclic = NULL;
    reach = NULL;
    ok = 1;

done:
    big_free(frames);
    big_free(index);
    big_free(stack);
    big_free(frame_flags);
    big_free(comp);
    big_free(cyclic);
    big_free(reach);
    return ok ? 0 : -1;
}

/* Sets flags[s] for every seed s; with queue, also appends each new seed to it.
 * Iterating runs arbitrary code, but callers hold only their own buffers then. */
/* Each item of an iterable of node (or edge) ids, bounds-checked; -1 with an error. */
static int
for_each_id(PyObject *items, Py_ssize_t limit, int (*visit)(void *, Py_ssize_t), void *ctx)
{
    /* An int64 buffer (the members from cycle_candidates) is read in place:
     * at 10^6 ids, making an int object per id costs more than the visit. */
    if (PyObject_CheckBuffer(items)) {
        Py_buffer view;
        if (get_i64_buffer(items, &view, "ids") == 0) {
            const int64_t *ids = (const int64_t *)view.buf;
            Py_ssize_t count = view.len / 8;
            int status = 0;
            for (Py_ssize_t i = 0; i < count && status == 0; i++) {
                if (ids[i] < 0 || ids[i] >= (int64_t)limit) {
                    PyErr_Format(PyExc_IndexError, "seed %lld out of range for %zd nodes",
                                 (long long)ids[i], limit);
                    status = -1;
                } else {
                    status = visit(ctx, (Py_ssize_t)ids[i]);
                }
            }
            PyBuffer_Release(&view);
            return status;
        }
        PyErr_Clear(); /* another kind of buffer (bytes): iterate it below */
    }
    PyObject *it = PyObject_GetIter(items), *item;
    if (it == NULL) {
        return -1;
    }
    while ((item = PyIter_Next(it)) != NULL) {
        Py_ssize_t s = PyNumber_AsSsize_t(item, PyExc_IndexError);
        Py_DECREF(item);
        if (s == -1 && PyErr_Occurred()) {
            break;
        }
        if (s < 0 || s >= limit) {
            PyErr_Format(PyExc_IndexError, "seed %zd out of range for %zd nodes", s, limit);
            break;
        }
        if (visit(ctx, s) < 0) {
            break;
        }
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

typedef struct {
    uint8_t *flags;
    int64_t *queue;
    Py_ssize_t *queued;
} flag_ctx;

static int
visit_flag(void *ctx, Py_ssize_t s)
{
    flag_ctx *c = (flag_ctx *)ctx;
    if (!c->flags[s]) {
        c->flags[s] = 1;
        if (c->queue != NULL) {
            c->queue[(*c->queued)++] = s;
        }
    }
    return 0;
}

static int
read_seeds(PyObject *seeds, Py_ssize_t n, uint8_t *flags, int64_t *queue, Py_ssize_t *queued)
{
    flag_ctx ctx = {flags, queue, queued};
    return for_each_id(seeds, n, visit_flag, &ctx);
}

static PyObject *
fg_find_components(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    csr_t g;
    sccs_t sccs;
    PyObject *comp_mv = NULL, *cyc_mv = NULL, *result = NULL;

    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "find_components(offsets, targets) takes 2 arguments");
        return NULL;
    }
    if (csr_open(&g, args[0], args[1]) < 0) {
        return NULL;
    }
    if (compute_sccs(&g, NULL, &sccs) < 0) {
        csr_release(&g);
        return NULL;
    }
    comp_mv = view_of((void **)&sccs.comp, g.n * (Py_ssize_t)sizeof(int64_t), "q");
    if (comp_mv != NULL) {
        cyc_mv = view_of((void **)&sccs.cyclic, (Py_ssize_t)sccs.ncomp, NULL);
    }
    if (cyc_mv != NULL) {
        result = Py_BuildValue("(OLO)", comp_mv, (long long)sccs.ncomp, cyc_mv);
    }
    Py_XDECREF(comp_mv);
    Py_XDECREF(cyc_mv);
    sccs_free(&sccs);
    csr_release(&g);
    return result;
}

static PyObject *
fg_cycle_candidates(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    csr_t g;
    sccs_t sccs;
    uint8_t *seed = NULL;
    PyObject *comp_mv = NULL, *members = NULL, *result = NULL;
    int64_t cycle_count = 0;

    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError,
                        "cycle_candidates(offsets, targets, seeds_or_None) takes 3 arguments");
        return NULL;
    }
    if (csr_open(&g, args[0], args[1]) < 0) {
        return NULL;
    }
    memset(&sccs, 0, sizeof(sccs));
    if (args[2] != Py_None) {
        seed = (uint8_t *)big_alloc((size_t)g.n + 1, 1);
        if (seed == NULL || read_seeds(args[2], g.n, seed, NULL, NULL) < 0) {
            goto done;
        }
    }
    if (compute_sccs(&g, seed, &sccs) < 0) {
        goto done;
    }
    for (int64_t c = 0; c < sccs.ncomp; c++) {
        cycle_count += sccs.cyclic[c];
    }
    /* An int64 array, not a list: at 10^6 members a list of ints is 36 MiB. */
    int64_t *picked = (int64_t *)big_alloc(((size_t)g.n + 1) * sizeof(int64_t), 0);
    Py_ssize_t npicked = 0;
    if (picked == NULL) {
        goto done;
    }
    for (Py_ssize_t v = 0; v < g.n; v++) {
        int64_t c = sccs.comp[v];
        if (sccs.cyclic[c] && (seed == NULL || sccs.reach[c])) {
            picked[npicked++] = v;
        }
    }
    int64_t *fitted = (int64_t *)big_grow(picked, ((size_t)npicked + 1) * sizeof(int64_t));
    if (fitted == NULL) {
        big_free(picked);
        goto done;
    }
    members = view_of((void **)&fitted, npicked * (Py_ssize_t)sizeof(int64_t), "q");
    if (members == NULL) {
        goto done;
    }
    comp_mv = view_of((void **)&sccs.comp, g.n * (Py_ssize_t)sizeof(int64_t), "q");
    if (comp_mv != NULL) {
        result = Py_BuildValue("(OLO)", comp_mv, (long long)cycle_count, members);
    }

done:
    Py_XDECREF(comp_mv);
    Py_XDECREF(members);
    big_free(seed);
    sccs_free(&sccs);
    csr_release(&g);
    return result;
}

/* ------------------------------------------------------------------ */
/* Reverse reachability                                                */

/* The edges of g grouped by target, in edge order within each target: a
 * counting sort. *roff gets n + 2 entries (the first n + 1 are the offsets),
 * *rdata m + 1: each edge's source node (sources != 0) or its position. */
static int
reverse_csr(const csr_t *g, int sources, int64_t **roff_out, int64_t **rdata_out)
{
    Py_ssize_t n = g->n, m = g->m;
    int64_t *roff = (int64_t *)big_alloc(((size_t)n + 2) * sizeof(int64_t), 1);
    int64_t *rdata = (int64_t *)big_alloc((size_t)(m + 1) * sizeof(int64_t), 0);
    if (roff == NULL || rdata == NULL) {
        big_free(roff);
        big_free(rdata);
        return -1;
    }
    /* roff[w + 1] ends as the start of w + 1. */
    for (Py_ssize_t e = 0; e < m; e++) {
        roff[g->tgt[e] + 2]++;
    }
    for (Py_ssize_t v = 0; v < n; v++) {
        roff[v + 2] += roff[v + 1];
    }
    for (Py_ssize_t v = 0; v < n; v++) {
        for (int64_t e = g->off[v]; e < g->off[v + 1]; e++) {
            rdata[roff[g->tgt[e] + 1]++] = sources ? (int64_t)v : e;
        }
    }
    *roff_out = roff;
    *rdata_out = rdata;
    return 0;
}

/* reverse_edges(offsets, targets) -> (offsets, edges): for each node, the
 * positions in targets of the edges into it, ascending. */
static PyObject *
fg_reverse_edges(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    csr_t g;
    int64_t *roff = NULL, *redge = NULL;
    PyObject *offsets = NULL, *edges = NULL, *result = NULL;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "reverse_edges(offsets, targets) takes 2 arguments");
        return NULL;
    }
    if (csr_open(&g, args[0], args[1]) < 0) {
        return NULL;
    }
    if (reverse_csr(&g, 0, &roff, &redge) == 0) {
        offsets = view_of((void **)&roff, (g.n + 1) * (Py_ssize_t)sizeof(int64_t), "q");
        edges = view_of((void **)&redge, g.m * (Py_ssize_t)sizeof(int64_t), "q");
        if (offsets != NULL && edges != NULL) {
            result = PyTuple_Pack(2, offsets, edges);
        }
    }
    Py_XDECREF(offsets);
    Py_XDECREF(edges);
    big_free(roff);
    big_free(redge);
    csr_release(&g);
    return result;
}

static PyObject *
fg_nodes_reaching(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    csr_t g;
    PyObject *result = NULL;
    int64_t *roff = NULL, *rtgt = NULL, *queue = NULL;
    Py_ssize_t n, head = 0, tail = 0;
    uint8_t *mask = NULL;

    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError,
                        "nodes_reaching(offsets, targets, seeds) takes 3 arguments");
        return NULL;
    }
    if (csr_open(&g, args[0], args[1]) < 0) {
        return NULL;
    }
    n = g.n;
    mask = (uint8_t *)big_alloc((size_t)n, 1);
    queue = (int64_t *)big_alloc((size_t)(n + 1) * sizeof(int64_t), 0);
    if (mask == NULL || queue == NULL) {
        goto done;
    }

    /* Seeds are read before the reverse CSR is built so that a bad seed fails fast. */
    if (read_seeds(args[2], n, mask, queue, &tail) < 0) {
        goto done;
    }

    if (reverse_csr(&g, 1, &roff, &rtgt) < 0) {
        goto done;
    }
    while (head < tail) {
        int64_t w = queue[head++];
        for (int64_t e = roff[w]; e < roff[w + 1]; e++) {
            int64_t u = rtgt[e];
            if (!mask[u]) {
                mask[u] = 1;
                queue[tail++] = u;
            }
        }
    }
    result = view_of((void **)&mask, n, NULL);

done:
    big_free(mask);
    big_free(roff);
    big_free(rtgt);
    big_free(queue);
    csr_release(&g);
    return result;
}

/* ------------------------------------------------------------------ */
/* Selections and release                                              */

/* Break the captured cycles the way the collector's delete_garbage() does: the
 * objects are already finalized and their weakrefs cleared by the collection
 * that saved them, so tp_clear is the only step left. Each object's reference
 * is dropped right after its tp_clear, so reference counting frees it (and what
 * only it held) while it is still in cache, as the collector does, instead of
 * in a second pass over the list. The list is emptied first and its items
 * array becomes ours: a deallocator that runs code never sees a half-released
 * list, and no slot is written back (8 MiB of stores at 10^6 objects). */
static void
clear_one(PyObject *op)
{
    inquiry clear = Py_TYPE(op)->tp_clear;
    /* Saved garbage is tracked. An untracked object is no garbage of a cycle (a
     * graph's extra left behind, a dict untracked since): clearing it could empty
     * a container that live code still uses. An object only our reference still
     * holds (an earlier one's tp_clear dropped the rest) is freed by the decref
     * that follows, its deallocator dropping what it holds, exactly as after a
     * tp_clear: the call is saved (a ring then costs one tp_clear in all, as in
     * the collector's own delete_garbage()). */
    if (clear != NULL && Py_REFCNT(op) > 1 && is_tracked_gc(op)) {
        Py_INCREF(op);
        (void)clear(op);
        if (PyErr_Occurred()) {
            PyErr_WriteUnraisable(op);
        }
        Py_DECREF(op);
    }
    Py_DECREF(op);
}

static PyObject *
fg_clear_objects(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 1 || !PyList_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "clear_objects(objects: list)");
        return NULL;
    }
    PyObject *objects = args[0];
#ifdef Py_GIL_DISABLED
    /* The free-threaded list keeps its items in a different layout: each slot
     * becomes None, then its object is cleared (the size is read again: a
     * deallocator may run code). */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(objects); i++) {
        PyObject *op = PyList_GET_ITEM(objects, i);
        Py_INCREF(Py_None);
        PyList_SET_ITEM(objects, i, Py_None);
        clear_one(op);
    }
#else
    PyListObject *list = (PyListObject *)objects;
    Py_ssize_t n = Py_SIZE(list);
    PyObject **items = list->ob_item;
    list->ob_item = NULL;
    list->allocated = 0;
    Py_SET_SIZE(list, 0);
    for (Py_ssize_t i = 0; i < n; i++) {
        clear_one(items[i]);
    }
    PyMem_Free(items);
#endif
    Py_RETURN_NONE;
}

/* Move items[start:] into a new list (start clamped to [0, len(items)]). The
 * references change owner instead of being copied and then dropped: at 10^6
 * objects, writing every reference count twice (a cache miss each) costs as
 * much as building the graph. */
static PyObject *take_tail_impl(PyObject *items, Py_ssize_t start);

static PyObject *
fg_take_tail(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 2 || !PyList_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "take_tail(items: list, start: int)");
        return NULL;
    }
    Py_ssize_t start = PyNumber_AsSsize_t(args[1], NULL); /* clamps, as the twin does */
    if (start == -1 && PyErr_Occurred()) {
        return NULL;
    }
    /* Off while the size is in hand: on 3.10/3.11 the list allocation below
     * can run a collection, whose finalizers (or DEBUG_SAVEALL) could resize
     * the very list we are splitting. */
    int was_enabled = PyGC_Disable();
    PyObject *tail = take_tail_impl(args[0], start);
    if (was_enabled) {
        PyGC_Enable();
    }
    return tail;
}

static PyObject *
take_tail_impl(PyObject *items, Py_ssize_t start)
{
    Py_ssize_t n = PyList_GET_SIZE(items);
    start = start < 0 ? 0 : (start > n ? n : start);
#ifdef Py_GIL_DISABLED
    /* The free-threaded list keeps its items in a different layout. */
    PyObject *tail = PyList_GetSlice(items, start, n);
    if (tail != NULL && PyList_SetSlice(items, start, n, NULL) < 0) {
        Py_CLEAR(tail);
    }
    return tail;
#else
    PyListObject *src = (PyListObject *)items;
    if (start == 0) {
        PyListObject *all = (PyListObject *)PyList_New(0);
        if (all == NULL) {
            return NULL;
        }
        all->ob_item = src->ob_item;
        all->allocated = src->allocated;
        Py_SET_SIZE(all, n);
        src->ob_item = NULL;
        src->allocated = 0;
        Py_SET_SIZE(src, 0);
        return (PyObject *)all;
    }
    PyObject *tail = PyList_New(n - start);
    if (tail == NULL) {
        return NULL;
    }
    if (n > start) {
        memcpy(((PyListObject *)tail)->ob_item, src->ob_item + start,
               (size_t)(n - start) * sizeof(PyObject *));
    }
    Py_SET_SIZE(src, start);
    if (src->allocated > 2 * start + 16) {
        /* Give back the capacity the tail used (megabytes at 10^6 objects). */
        PyObject **kept = (PyObject **)PyMem_Realloc(src->ob_item, (size_t)start * sizeof(PyObject *));
        if (kept != NULL) {
            src->ob_item = kept;
            src->allocated = start;
        }
    }
    return tail;
#endif
}

/* ------------------------------------------------------------------ */
/* Which saved objects are ours                                        */

/* A collection armed with DEBUG_SAVEALL appends what it found unreachable to
 * gc.garbage last, after the weakref callbacks and finalizers it ran (which may
 * append the user's own objects). Its info["collected"] also counts the weakrefs
 * freed after their callbacks, so the count bounds the saved tail from above
 * only. What the collection saved is told by identity instead: nothing outside
 * those objects refers to any of them (an object a finalizer made reachable again
 * is not saved), while what the user appended is either held from elsewhere, or
 * reached from something that is. saved_start returns the first index of the
 * longest tail of items[first:end] that nothing outside it holds: the subtraction
 * and reach passes of the collector itself, over that window. */
typedef struct {
    ptrtable table;       /* window object -> its index among the distinct ones */
    Py_ssize_t *outside;  /* references from outside the window, per distinct object */
    uint8_t *held;        /* 1: held from outside, or reached from such an object */
    int64_t *stack;
    Py_ssize_t stacked;
} ownership;

static int
visit_subtract(PyObject *o, void *arg)
{
    ownership *w = (ownership *)arg;
    slot_t *s = table_lookup(&w->table, o);
    if (s->key != NULL) {
        w->outside[s->index]--;
    }
    return 0;
}

static int
visit_hold(PyObject *o, void *arg)
{
    ownership *w = (ownership *)arg;
    slot_t *s = table_lookup(&w->table, o);
    if (s->key != NULL && !w->held[s->index]) {
        w->held[s->index] = 1;
        w->stack[w->stacked++] = s->index;
    }
    return 0;
}

static Py_ssize_t
saved_start_impl(PyObject *items, Py_ssize_t first, Py_ssize_t end)
{
    Py_ssize_t n = end - first;
    ownership w = {0};
    PyObject **objects = (PyObject **)PyMem_Malloc((size_t)(n ? n : 1) * sizeof(PyObject *));
    w.outside = (Py_ssize_t *)PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t));
    w.held = (uint8_t *)PyMem_Calloc((size_t)(n ? n : 1), 1);
    w.stack = (int64_t *)PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    Py_ssize_t result = -1;
    if (objects == NULL || w.outside == NULL || w.held == NULL || w.stack == NULL ||
        table_init(&w.table, (size_t)n, 0) < 0) {
        w.table.slots = NULL;
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t distinct = 0;
    for (Py_ssize_t i = first; i < end; i++) {
        PyObject *o = PyList_GET_ITEM(items, i);
        slot_t *s = table_lookup(&w.table, o);
        if (s->key == NULL) {
            s->key = o;
            s->index = distinct;
            w.table.used++;
            objects[distinct] = o;
            w.outside[distinct] = Py_REFCNT(o);
            distinct++;
        }
        w.outside[s->index]--; /* this entry of items is not an outside reference */
    }
    for (Py_ssize_t k = 0; k < distinct; k++) {
        PyObject *o = objects[k];
        if (o != items && is_gc_object(o) && Py_TYPE(o)->tp_traverse != NULL) {
            (void)Py_TYPE(o)->tp_traverse(o, visit_subtract, &w);
        }
    }
    /* Saved garbage is tracked, and items itself is the user's (its entries are
     * counted above, so it is not followed). */
    for (Py_ssize_t k = 0; k < distinct; k++) {
        PyObject *o = objects[k];
        if (w.outside[k] > 0 || o == items || !is_tracked_gc(o)) {
            w.held[k] = 1;
            w.stack[w.stacked++] = k;
        }
    }
    Py_ssize_t held = w.stacked;
    while (w.stacked > 0) {
        PyObject *o = objects[w.stack[--w.stacked]];
        if (o != items && is_gc_object(o) && Py_TYPE(o)->tp_traverse != NULL) {
            Py_ssize_t before = w.stacked;
            (void)Py_TYPE(o)->tp_traverse(o, visit_hold, &w);
            held += w.stacked - before;
        }
    }
    result = first;
    for (Py_ssize_t i = end - 1; held > 0 && i >= first; i--) {
        if (w.held[table_lookup(&w.table, PyList_GET_ITEM(items, i))->index]) {
            result = i + 1;
            break;
        }
    }
done:
    if (w.table.slots != NULL) {
        table_free(&w.table);
    }
    PyMem_Free(objects);
    PyMem_Free(w.outside);
    PyMem_Free(w.held);
    PyMem_Free(w.stack);
    return result;
}

#ifndef Py_GIL_DISABLED
/* The collector's own record, read first because it costs one header per object:
 * delete_garbage() moves what it saves, in the order it appends it, to the end
 * of the older generation's list, after everything else it moves. So the saved
 * tail is also a run of list neighbours, and an entry in front of such a run is
 * not saved. The run can go on into an entry the user appended only where that
 * entry is, in the list, the neighbour just before the first saved object (an
 * object that survived this collection, or that a finalizer brought back), and
 * the user code that appends it runs in a finalizer (whose object then has its
 * FINALIZED flag, and is saved or brought back: in the run either way) or in a
 * weakref callback. A run that covers the window and holds no finalized object
 * is taken as saved; any other window gets the full test (over all of it: should a
 * collector ever move saved objects apart, nothing saved is left behind).
 * What stays open: a weakref callback (no finalizer) that appends the one live
 * object that lies just before the saved ones in the list. The header is the two
 * words in front of a tracked object; the low bits of its previous-link are
 * flags, the lowest one FINALIZED (CPython 3.10-3.14 with the GIL). */
typedef struct {
    uintptr_t next;
    uintptr_t prev;
} gc_links;

#define GC_LINKS(o) ((gc_links *)(o) - 1)
#define GC_PREV_MASK (~(uintptr_t)3)
#define GC_PREV_FINALIZED ((uintptr_t)1)

/* The start of the longest run of list neighbours that ends the window; *finalized
 * tells whether an object in it has run its finalizer. */
static Py_ssize_t
gc_list_run(PyObject *items, Py_ssize_t first, Py_ssize_t end, int *finalized)
{
    *finalized = 0;
    if (end <= first || !is_tracked_gc(PyList_GET_ITEM(items, end - 1))) {
        return end;
    }
    Py_ssize_t i = end - 1;
    for (;;) {
        PyObject *o = PyList_GET_ITEM(items, i);
        /* The headers are read in list order, not along their links: fetched ahead. */
        if (i >= first + 64) {
            PREFETCH(GC_LINKS(PyList_GET_ITEM(items, i - 64)));
        }
        uintptr_t prev = GC_LINKS(o)->prev;
        *finalized |= (prev & GC_PREV_FINALIZED) != 0;
        if (i == first) {
            return i;
        }
        PyObject *before = PyList_GET_ITEM(items, i - 1);
        if (!is_tracked_gc(before) || (prev & GC_PREV_MASK) != (uintptr_t)GC_LINKS(before)) {
            return i;
        }
        i--;
    }
}
#endif

static PyObject *
fg_saved_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 3 || !PyList_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "saved_start(items: list, first: int, end: int)");
        return NULL;
    }
    Py_ssize_t first = PyNumber_AsSsize_t(args[1], NULL);
    Py_ssize_t end = PyNumber_AsSsize_t(args[2], NULL);
    if ((first == -1 || end == -1) && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t size = PyList_GET_SIZE(args[0]);
    end = end < 0 ? 0 : (end > size ? size : end); /* clamped, as the twin does */
    first = first < 0 ? 0 : (first > end ? end : first);
    /* Off while raw pointers are held: nothing here may run a collection. */
    int was_enabled = PyGC_Disable();
#ifndef Py_GIL_DISABLED
    int finalized;
    Py_ssize_t run = gc_list_run(args[0], first, end, &finalized);
    Py_ssize_t start = run == first && !finalized ? first : saved_start_impl(args[0], first, end);
#else
    Py_ssize_t start = saved_start_impl(args[0], first, end);
#endif
    if (was_enabled) {
        PyGC_Enable();
    }
    return start < 0 ? NULL : PyLong_FromSsize_t(start);
}

/* ------------------------------------------------------------------ */
/* Per-component work: a workspace over one graph                      */

/* Reach, shortest paths, edge classes and peeling run once per reported
 * cycle. Each call must cost what its own component (or what it visits)
 * costs, never the size of the whole graph: the CSR is validated once, and
 * the scratch arrays are allocated once and reused through epoch stamps. */

static int
get_components(PyObject *obj, Py_ssize_t n, Py_buffer *view, const int64_t **comp)
{
    if (get_i64_buffer(obj, view, "component_of") < 0) {
        return -1;
    }
    if (view->len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "component_of must have one entry per node");
        PyBuffer_Release(view);
        return -1;
    }
    *comp = (const int64_t *)view->buf;
    return 0;
}

/* A class key packs (source type, target type, position, degree); the degree's
 * CLASS_OF_DICT bit says the source is an instance's attribute dict and the source
 * type is that instance's class. */
#define CLASS_OF_DICT 32
#define KEY_SOURCE(key) ((key) >> 35)
#define KEY_TARGET(key) (((key) >> 11) & 0xFFFFFF)
#define KEY_POSITION(key) ((int)(((key) >> 6) & 31))
#define KEY_DEGREE(key) ((int)((key) & 63))

static inline uint64_t
class_key(int32_t src, int32_t dst, int pos, int deg)
{
    return ((uint64_t)(uint32_t)src << 35) | ((uint64_t)(uint32_t)dst << 11) |
           ((uint64_t)pos << 6) | (uint64_t)deg;
}

/* Class id of a key: found, added (add != 0), or -1 when absent; -2 on MemoryError. */
static int64_t
class_id(classes_t *c, uint64_t key, int add)
{
    if (add && 2 * (c->nclasses + 1) > c->kcap) {
        size_t ncap = c->kcap ? 2 * c->kcap : 64;
        uint64_t *keys = (uint64_t *)PyMem_RawMalloc(ncap * sizeof(uint64_t));
        int64_t *ids = (int64_t *)PyMem_RawMalloc(ncap * sizeof(int64_t));
        if (keys == NULL || ids == NULL) {
            PyMem_RawFree(keys);
            PyMem_RawFree(ids);
            PyErr_NoMemory();
            return -2;
        }
        memset(keys, 0xff, ncap * sizeof(uint64_t));
        for (size_t i = 0; i < c->kcap; i++) {
            if (c->keys[i] != CLASS_EMPTY) {
                size_t h = mix64(c->keys[i]) & (ncap - 1);
                while (keys[h] != CLASS_EMPTY) {
                    h = (h + 1) & (ncap - 1);
                }
                keys[h] = c->keys[i];
                ids[h] = c->ids[i];
            }
        }
        PyMem_RawFree(c->keys);
        PyMem_RawFree(c->ids);
        c->keys = keys;
        c->ids = ids;
        c->kcap = ncap;
    }
    if (c->kcap == 0) {
        return -1;
    }
    size_t h = mix64(key) & (c->kcap - 1);
    while (c->keys[h] != CLASS_EMPTY) {
        if (c->keys[h] == key) {
            return c->ids[h];
        }
        h = (h + 1) & (c->kcap - 1);
    }
    if (!add) {
        return -1;
    }
    c->keys[h] = key;
    c->ids[h] = (int64_t)c->nclasses++;
    return c->ids[h];
}

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

typedef struct {
    PyObject_HEAD
    csr_t g;
    int open;         /* g and cb hold buffers */
    Py_buffer cb;
    const int64_t *comp;
    PyObject *nodes;  /* the graph's node list: strong refs, dropped by close() */
    uint32_t *stamp;  /* visited when == epoch */
    /* Goal or member when the high half == epoch; the low half is a member's
     * type index. One array, so an edge costs one random memory access. */
    uint64_t *member;
    uint32_t *parent; /* BFS parent; indegree while peeling */
    uint32_t *queue;
    int64_t *scratch_e; /* one node's edges to members, and their target types */
    int32_t *scratch_t;
    size_t scratch_cap;
    uint32_t epoch;
    /* Type indices of member[], kept across calls (only its types part is used). */
    classes_t types;
    /* The members last marked (a read-only buffer, held so its identity stays),
     * valid while epoch == marked_epoch: find_structure's calls on one giant
     * component then read 10^6 object headers once, not once per call. */
    PyObject *marked_by;
    uint32_t marked_epoch;
    Py_ssize_t marked_count;
    int members_ascending; /* the members last marked came in ascending order */
    /* The class id of each edge from a member, as edge_classes numbered them
     * (EDGE_OUTSIDE: the edge leaves the members), with the key of each id;
     * valid while epoch == edge_class_epoch (0: never). acyclic_without then
     * peels from these bytes, without member[] or a class table per edge. */
    uint8_t *edge_class;
    uint64_t *class_keys;
    /* Per class id, how many of its edges u -> v have u >= v (not rising) and
     * u <= v (not falling). When node ids rise along every edge kept (or fall
     * along every one), no loop can close. */
    int64_t *class_turns;
    size_t nclass_keys;
    uint32_t edge_class_epoch;
    /* Each node's type index (into types, seeded in the build's order), when
     * the offsets came from build_graph: held through typed_by. */
    const uint32_t *node_types;
    PyObject *typed_by;
    /* The type index of dict, -1 until ws_members looks it up. */
    int64_t dict_type;
} Workspace;

/* In member[]'s low word, a member dict that is another member's attribute dict:
 * the bit, and that member's type index in place of dict's. */
#define OWNED_DICT 0x80000000u

#define EDGE_OUTSIDE 255 /* also the most class ids the bytes hold */
#define PEELED UINT32_MAX /* acyclic_without: in place of a peeled member's in-degree */
/* class_turns[2 * id + NOT_RISING], class_turns[2 * id + NOT_FALLING] */
#define NOT_RISING 0
#define NOT_FALLING 1

static void
ws_close_impl(Workspace *w)
{
    if (w->open) {
        csr_release(&w->g);
        PyBuffer_Release(&w->cb);
        w->open = 0;
    }
    Py_CLEAR(w->nodes);
    Py_CLEAR(w->marked_by);
    w->node_types = NULL;
    Py_CLEAR(w->typed_by);
    classes_free(&w->types);
    big_free(w->edge_class);
    w->edge_class = NULL;
    PyMem_RawFree(w->class_keys);
    w->class_keys = NULL;
    PyMem_RawFree(w->class_turns);
    w->class_turns = NULL;
    w->edge_class_epoch = 0;
    big_free(w->stamp);
    big_free(w->member);
    big_free(w->parent);
    big_free(w->queue);
    PyMem_RawFree(w->scratch_e);
    PyMem_RawFree(w->scratch_t);
    w->stamp = w->parent = w->queue = NULL;
    w->member = NULL;
    w->scratch_e = NULL;
    w->scratch_t = NULL;
    w->scratch_cap = 0;
}

static void
ws_dealloc(PyObject *self)
{
    ws_close_impl((Workspace *)self);
    Py_TYPE(self)->tp_free(self);
}

static inline int
ws_is_member(const Workspace *w, int64_t v)
{
    return (uint32_t)(w->member[v] >> 32) == w->epoch;
}

static inline int32_t
ws_type(const Workspace *w, int64_t v)
{
    uint32_t t = (uint32_t)w->member[v];
    return (int32_t)(t & OWNED_DICT ? (uint32_t)w->dict_type : t);
}

/* Room for one node's edges in the scratch arrays; -1 with MemoryError. */
static int
ws_scratch(Workspace *w, size_t need)
{
    if (need <= w->scratch_cap) {
        return 0;
    }
    size_t cap = w->scratch_cap ? w->scratch_cap : 64;
    while (cap < need) {
        cap *= 2;
    }
    int64_t *e = (int64_t *)PyMem_RawRealloc(w->scratch_e, cap * sizeof(int64_t));
    if (e != NULL) {
        w->scratch_e = e;
    }
    int32_t *t = (int32_t *)PyMem_RawRealloc(w->scratch_t, cap * sizeof(int32_t));
    if (t != NULL) {
        w->scratch_t = t;
    }
    if (e == NULL || t == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    w->scratch_cap = cap;
    return 0;
}

/* A fresh epoch; on wrap-around the stamps are cleared once. */
static uint32_t
ws_next_epoch(Workspace *w)
{
    if (++w->epoch == 0) {
        memset(w->stamp, 0, ((size_t)w->g.n + 1) * sizeof(uint32_t));
        memset(w->member, 0, ((size_t)w->g.n + 1) * sizeof(uint64_t));
        w->epoch = 1;
    }
    return w->epoch;
}

static int
ws_check(Workspace *w)
{
    if (!w->open) {
        PyErr_SetString(PyExc_ValueError, "workspace is closed");
        return -1;
    }
    if (PyList_GET_SIZE(w->nodes) < w->g.n) {
        PyErr_SetString(PyExc_ValueError, "nodes must hold every graph node");
        return -1;
    }
    return 0;
}

typedef struct {
    Workspace *w;
    Py_ssize_t tail;
} seed_ctx;

static int
visit_seed(void *ctx, Py_ssize_t s)
{
    seed_ctx *c = (seed_ctx *)ctx;
    if (c->w->stamp[s] != c->w->epoch) {
        c->w->stamp[s] = c->w->epoch;
        c->w->queue[c->tail++] = (uint32_t)s;
    }
    return 0;
}

typedef struct {
    Workspace *w;
    Py_ssize_t count;
} mark_ctx;

static int
visit_mark(void *ctx, Py_ssize_t s)
{
    mark_ctx *c = (mark_ctx *)ctx;
    if (!ws_is_member(c->w, s)) {
        c->w->member[s] = (uint64_t)c->w->epoch << 32;
        c->count++;
    }
    return 0;
}

/* Reads the node types that build_graph left with the offsets, when they
 * describe these nodes: the types are indexed in the build's order, and a
 * sample of nodes must have the type recorded for it (the caller may have
 * paired the offsets with another list). -1 with MemoryError. */
static int
adopt_node_types(Workspace *w, PyObject *offsets)
{
    if (!PyMemoryView_Check(offsets)) {
        return 0;
    }
    PyObject *base = PyMemoryView_GET_BASE(offsets);
    if (base == NULL || !Py_IS_TYPE(base, &BigArray_Type)) {
        return 0;
    }
    BigArray *a = (BigArray *)base;
    if (a->node_types == NULL || a->ntyped != w->g.n || w->types.ntypes != 0) {
        return 0;
    }
    PyObject *types = a->node_type_objects;
    Py_ssize_t ntypes = PyTuple_GET_SIZE(types);
    for (Py_ssize_t k = 0; k < ntypes; k++) {
        PyTypeObject *tp = (PyTypeObject *)PyTuple_GET_ITEM(types, k);
        int64_t index = type_index(&w->types, tp);
        if (index < 0) {
            return -1;
        }
        if (index != k) { /* a type twice: not a build's table */
            classes_free(&w->types);
            return 0;
        }
    }
    Py_ssize_t n = w->g.n, step = n / 61 + 1;
    for (Py_ssize_t i = 0; i < n; i += step) {
        uint32_t t = a->node_types[i];
        if ((Py_ssize_t)t >= ntypes ||
            Py_TYPE(PyList_GET_ITEM(w->nodes, i)) != (PyTypeObject *)PyTuple_GET_ITEM(types, t)) {
            classes_free(&w->types);
            return 0;
        }
    }
    Py_INCREF(base);
    w->typed_by = base;
    w->node_types = a->node_types;
    return 0;
}

static PyObject *
ws_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *nodes, *offsets, *targets, *component_of;
    static char *kwlist[] = {"nodes", "offsets", "targets", "component_of", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!OOO:Workspace", kwlist, &PyList_Type, &nodes,
                                     &offsets, &targets, &component_of)) {
        return NULL;
    }
    Workspace *w = (Workspace *)type->tp_alloc(type, 0);
    if (w == NULL) {
        return NULL;
    }
    w->dict_type = -1;
    if (csr_open(&w->g, offsets, targets) < 0) {
        Py_DECREF(w);
        return NULL;
    }
    if (get_components(component_of, w->g.n, &w->cb, &w->comp) < 0) {
        csr_release(&w->g);
        Py_DECREF(w);
        return NULL;
    }
    w->open = 1;
    Py_INCREF(nodes);
    w->nodes = nodes;
    if (w->g.n > TABLE_MAX_NODES || PyList_GET_SIZE(nodes) < w->g.n) {
        PyErr_SetString(PyExc_ValueError, "nodes must hold every graph node (at most 2**32 - 2)");
        Py_DECREF(w);
        return NULL;
    }
    if (adopt_node_types(w, offsets) < 0) {
        Py_DECREF(w);
        return NULL;
    }
    size_t n = (size_t)w->g.n + 1;
    w->member = (uint64_t *)big_alloc(n * sizeof(uint64_t), 1);
    w->stamp = (uint32_t *)big_alloc(n * sizeof(uint32_t), 1);
    w->parent = (uint32_t *)big_alloc(n * sizeof(uint32_t), 0);
    w->queue = (uint32_t *)big_alloc(n * sizeof(uint32_t), 0);
    if (w->stamp == NULL || w->member == NULL || w->parent == NULL || w->queue == NULL) {
        Py_DECREF(w);
        return NULL;
    }
    return (PyObject *)w;
}

/* The BFS of reach(): the seeds are queue[0..tail), stamped with the current
 * epoch. Returns the list of wanted nodes found, the first limit of them. */
static PyObject *
reach_queued(Workspace *w, Py_ssize_t tail, const uint8_t *wanted, const uint8_t *blocked,
             Py_ssize_t blocked_len, Py_ssize_t limit)
{
    uint32_t epoch = w->epoch;
    Py_ssize_t head = 0, found = 0;
    int64_t home = tail > 0 ? w->comp[w->queue[0]] : -1;
    for (Py_ssize_t i = 0; i < tail && found < limit; i++) {
        found += wanted == NULL || wanted[w->queue[i]];
    }
    /* The first limit wanted nodes in BFS order are settled once that many are
     * queued: a giant cycle holding one payload stops at the first member's edges
     * instead of visiting 10^6 others. */
    while (head < tail && found < limit) {
        uint32_t u = w->queue[head++];
        for (int64_t e = w->g.off[u]; e < w->g.off[u + 1]; e++) {
            int64_t v = w->g.tgt[e];
            if (w->stamp[v] == epoch) {
                continue;
            }
            int64_t c = w->comp[v];
            if (blocked != NULL && c != home && c < (int64_t)blocked_len && blocked[c]) {
                continue;
            }
            w->stamp[v] = epoch;
            w->queue[tail++] = (uint32_t)v;
            found += wanted == NULL || wanted[v];
        }
    }
    reach_visits += (uint64_t)head;
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0, listed = 0; i < tail && listed < limit; i++) {
        uint32_t v = w->queue[i];
        if (wanted != NULL && !wanted[v]) {
            continue;
        }
        listed++;
        PyObject *index = PyLong_FromUnsignedLong(v);
        if (index == NULL || PyList_Append(out, index) < 0) {
            Py_XDECREF(index);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(index);
    }
    return out;
}

/* reach(sources, wanted, blocked, limit=None) -> list: nodes reachable from
 * sources, BFS order, sources first; only those flagged in wanted (a byte per
 * node) unless it is None, and only the first limit of them. Nodes of a
 * component flagged in blocked (a byte per component id), other than the first
 * source's, are neither listed nor entered. */
static PyObject *
ws_reach(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Workspace *w = (Workspace *)self;
    Py_buffer wb = {0}, bb = {0};
    const uint8_t *wanted = NULL, *blocked = NULL;
    PyObject *result = NULL;
    Py_ssize_t limit = PY_SSIZE_T_MAX;
    if (nargs != 3 && nargs != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "reach(sources, wanted, blocked, limit=None) takes 3 or 4 arguments");
        return NULL;
    }
    if (ws_check(w) < 0) {
        return NULL;
    }
    if (nargs == 4 && args[3] != Py_None) {
        limit = PyNumber_AsSsize_t(args[3], PyExc_OverflowError);
        if (limit == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (limit < 0) {
            PyErr_SetString(PyExc_ValueError, "limit must not be negative");
            return NULL;
        }
    }
    if (args[1] != Py_None) {
        if (PyObject_GetBuffer(args[1], &wb, PyBUF_C_CONTIGUOUS) < 0) {
            goto done;
        }
        if (wb.len < w->g.n) {
            PyErr_SetString(PyExc_ValueError, "wanted must have one byte per node");
            goto done;
        }
        wanted = (const uint8_t *)wb.buf;
    }
    if (args[2] != Py_None) {
        if (PyObject_GetBuffer(args[2], &bb, PyBUF_C_CONTIGUOUS) < 0) {
            goto done;
        }
        blocked = (const uint8_t *)bb.buf;
    }
    ws_next_epoch(w);
    seed_ctx ctx = {w, 0};
    if (for_each_id(args[0], w->g.n, visit_seed, &ctx) < 0) {
        goto done;
    }
    result = reach_queued(w, ctx.tail, wanted, blocked, blocked ? bb.len : 0, limit);
done:
    if (wb.obj) {
        PyBuffer_Release(&wb);
    }
    if (bb.obj) {
        PyBuffer_Release(&bb);
    }
    return result;
}

/* cycle_keys(groups, wanted, blocked, limit, specific, big_members, big_edges,
 * keep_empty) -> [(key, members, retained), ...]: per group of members (a
 * component, ascending), what find_cycles groups alike cycles by, in one call
 * instead of Python per cycle. retained is reach(members, wanted, blocked,
 * limit); a group with none is left out unless keep_empty. key is ("structure",
 * component) for a big one (big_members members or more, or more than
 * big_edges references between its members), else the sorted ids of each
 * member's code object (a plain function) or class, then -1 - component when
 * specific(cls) was false for every class (builtins only: the shape needs the
 * full signature). specific runs Python code, asked once per class: the groups
 * are copied first, and the workspace is checked again after each answer. */
typedef struct {
    PyTypeObject *type;
    int answer;
} type_answer;

static int
u64_ascending(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int
int64_ascending_search(const void *key, const void *item)
{
    int64_t x = *(const int64_t *)key, y = *(const int64_t *)item;
    return (x > y) - (x < y);
}

static int
cycle_is_big(Workspace *w, const int64_t *m, Py_ssize_t count, Py_ssize_t big_members,
             Py_ssize_t big_edges)
{
    if (count >= big_members) {
        return 1;
    }
    int64_t edges = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        edges += w->g.off[m[i] + 1] - w->g.off[m[i]];
    }
    if (edges <= big_edges) {
        return 0; /* even counting references that leave the cycle */
    }
    int64_t inside = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        for (int64_t e = w->g.off[m[i]]; e < w->g.off[m[i] + 1]; e++) {
            inside += bsearch(&w->g.tgt[e], m, (size_t)count, sizeof(int64_t),
                              int64_ascending_search) != NULL;
        }
        if (inside > big_edges) {
            return 1;
        }
    }
    return 0;
}

/* The quick key of m[0..count) (see cycle_keys); NULL with an error. */
static PyObject *
cycle_quick_key(Workspace *w, const int64_t *m, Py_ssize_t count, PyObject *specific,
                type_answer *known, int *known_count, uint64_t *ids)
{
    int is_specific = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *obj = PyList_GET_ITEM(w->nodes, m[i]);
        PyTypeObject *cls = Py_TYPE(obj);
        if (cls == &PyFunction_Type) {
            ids[i] = (uint64_t)(uintptr_t)PyFunction_GET_CODE(obj);
            is_specific = 1;
            continue;
        }
        ids[i] = (uint64_t)(uintptr_t)cls;
        if (is_specific) {
            continue;
        }
        int answer = -1;
        for (int k = 0; k < *known_count; k++) {
            if (known[k].type == cls) {
                answer = known[k].answer;
                break;
            }
        }
        if (answer < 0) {
            /* Python code: it may close the workspace or shrink the nodes; the ids
             * read so far stay valid (the list holds the objects). */
            Py_INCREF(cls);
            PyObject *said = PyObject_CallOneArg(specific, (PyObject *)cls);
            Py_DECREF(cls);
            if (said == NULL) {
                return NULL;
            }
            answer = PyObject_IsTrue(said);
            Py_DECREF(said);
            if (answer < 0 || ws_check(w) < 0) {
                return NULL;
            }
            if (*known_count < 64) {
                known[(*known_count)++] = (type_answer){cls, answer};
            }
        }
        is_specific = answer;
    }
    qsort(ids, (size_t)count, sizeof(uint64_t), u64_ascending);
    PyObject *key = PyTuple_New(count + !is_specific);
    if (key == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *id = PyLong_FromUnsignedLongLong(ids[i]);
        if (id == NULL) {
            Py_DECREF(key);
            return NULL;
        }
        PyTuple_SET_ITEM(key, i, id);
    }
    if (!is_specific) {
        PyObject *own = PyLong_FromLongLong(-1 - w->comp[m[0]]);
        if (own == NULL) {
            Py_DECREF(key);
            return NULL;
        }
        PyTuple_SET_ITEM(key, count, own);
    }
    return key;
}

/* A group's members: an int64 buffer read in place (view keeps it; the one big
 * cycle of 10^6 members from cycle_candidates), else copied from a sequence of
 * ints into *copy. NULL with an error when out of range or not ascending. */
static const int64_t *
read_members(Workspace *w, PyObject *group, Py_buffer *view, int64_t **copy, Py_ssize_t *count)
{
    const int64_t *m = NULL;
    if (PyObject_CheckBuffer(group) && get_i64_buffer(group, view, "members") == 0) {
        *count = view->len / 8;
        m = (const int64_t *)view->buf;
    } else {
        PyErr_Clear();
        /* A tuple of our own: an item's __index__ may change the caller's list. */
        PyObject *items = PySequence_Check(group) ? PySequence_Tuple(group) : NULL;
        if (items == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "members must be a sequence of ints");
            }
            return NULL;
        }
        *count = PyTuple_GET_SIZE(items);
        *copy = big_alloc(((size_t)*count + 1) * sizeof(int64_t), 0);
        for (Py_ssize_t i = 0; *copy != NULL && i < *count; i++) {
            Py_ssize_t v = PyNumber_AsSsize_t(PyTuple_GET_ITEM(items, i), PyExc_IndexError);
            if (v == -1 && PyErr_Occurred()) {
                Py_DECREF(items);
                return NULL;
            }
            (*copy)[i] = v;
        }
        Py_DECREF(items);
        m = *copy;
        if (m == NULL) {
            return NULL;
        }
    }
    if (*count == 0) {
        PyErr_SetString(PyExc_IndexError, "a group must have members");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < *count; i++) {
        if (m[i] < 0 || m[i] >= w->g.n || (i > 0 && m[i] <= m[i - 1])) {
            PyErr_Format(PyExc_IndexError,
                         "members must be node ids below %zd, ascending (got %lld)",
                         (Py_ssize_t)w->g.n, (long long)m[i]);
            return NULL;
        }
    }
    return m;
}

static PyObject *
ws_cycle_keys(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Workspace *w = (Workspace *)self;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError,
                        "cycle_keys(groups, wanted, blocked, limit, specific, big_members, "
                        "big_edges, keep_empty) takes 8 arguments");
        return NULL;
    }
    if (ws_check(w) < 0) {
        return NULL;
    }
    if (!PyCallable_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "specific must be callable");
        return NULL;
    }
    /* Each conversion may run Python code: none runs with an error pending. */
    Py_ssize_t limit = PyNumber_AsSsize_t(args[3], PyExc_OverflowError);
    if (limit == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t big_members = PyNumber_AsSsize_t(args[5], PyExc_OverflowError);
    if (big_members == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t big_edges = PyNumber_AsSsize_t(args[6], PyExc_OverflowError);
    if (big_edges == -1 && PyErr_Occurred()) {
        return NULL;
    }
    int keep_empty = PyObject_IsTrue(args[7]);
    if (keep_empty < 0) {
        return NULL;
    }
    if (limit < 0) {
        PyErr_SetString(PyExc_ValueError, "limit must not be negative");
        return NULL;
    }
    PyObject *groups = PySequence_List(args[0]);
    if (groups == NULL) {
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(groups);
    const int64_t **members = PyMem_RawCalloc((size_t)count + 1, sizeof(int64_t *));
    int64_t **copies = PyMem_RawCalloc((size_t)count + 1, sizeof(int64_t *));
    Py_buffer *views = PyMem_RawCalloc((size_t)count + 1, sizeof(Py_buffer));
    Py_ssize_t *sizes = PyMem_RawCalloc((size_t)count + 1, sizeof(Py_ssize_t));
    Py_buffer wb = {0}, bb = {0};
    uint64_t *ids = NULL;
    Py_ssize_t most = 0;
    PyObject *out = NULL, *result = NULL;
    type_answer known[64];
    int known_count = 0;
    if (members == NULL || copies == NULL || views == NULL || sizes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* Everything that runs Python code (reading the groups, the buffers) first. */
    for (Py_ssize_t g = 0; g < count; g++) {
        members[g] = read_members(w, PyList_GET_ITEM(groups, g), &views[g], &copies[g], &sizes[g]);
        if (members[g] == NULL) {
            goto done;
        }
        if (sizes[g] < big_members && sizes[g] > most) {
            most = sizes[g]; /* the ids to sort: a big group has none */
        }
    }
    if (PyObject_GetBuffer(args[1], &wb, PyBUF_C_CONTIGUOUS) < 0 ||
        PyObject_GetBuffer(args[2], &bb, PyBUF_C_CONTIGUOUS) < 0) {
        goto done;
    }
    if (ws_check(w) < 0) {
        goto done;
    }
    if (wb.len < w->g.n) {
        PyErr_SetString(PyExc_ValueError, "wanted must have one byte per node");
        goto done;
    }
    ids = PyMem_RawMalloc(((size_t)most + 1) * sizeof(uint64_t));
    out = PyList_New(0);
    if (ids == NULL || out == NULL) {
        if (ids == NULL) {
            PyErr_NoMemory();
        }
        goto done;
    }
    for (Py_ssize_t g = 0; g < count; g++) {
        const int64_t *m = members[g];
        Py_ssize_t size = sizes[g];
        ws_next_epoch(w);
        for (Py_ssize_t i = 0; i < size; i++) {
            w->stamp[m[i]] = w->epoch;
            w->queue[i] = (uint32_t)m[i];
        }
        PyObject *retained =
            reach_queued(w, size, (const uint8_t *)wb.buf, (const uint8_t *)bb.buf, bb.len, limit);
        if (retained == NULL) {
            goto done;
        }
        if (PyList_GET_SIZE(retained) == 0 && !keep_empty) {
            Py_DECREF(retained);
            continue;
        }
        PyObject *key;
        if (cycle_is_big(w, m, size, big_members, big_edges)) {
            key = Py_BuildValue("(sL)", "structure", (long long)w->comp[m[0]]);
        } else {
            key = cycle_quick_key(w, m, size, args[4], known, &known_count, ids);
        }
        PyObject *row = key == NULL ? NULL
                                    : PyTuple_Pack(3, key, PyList_GET_ITEM(groups, g), retained);
        Py_XDECREF(key);
        Py_DECREF(retained);
        if (row == NULL || PyList_Append(out, row) < 0) {
            Py_XDECREF(row);
            goto done;
        }
        Py_DECREF(row);
    }
    result = out;
    out = NULL;
done:
    Py_XDECREF(out);
    if (wb.obj) {
        PyBuffer_Release(&wb);
    }
    if (bb.obj) {
        PyBuffer_Release(&bb);
    }
    for (Py_ssize_t g = 0; copies != NULL && views != NULL && g < count; g++) {
        big_free(copies[g]);
        if (views[g].obj != NULL) {
            PyBuffer_Release(&views[g]);
        }
    }
    PyMem_RawFree((void *)members);
    PyMem_RawFree(copies);
    PyMem_RawFree(views);
    PyMem_RawFree(sizes);
    PyMem_RawFree(ids);
    Py_DECREF(groups);
    return result;
}

/* shortest_paths(sources, goals) -> {goal: [node, ...]}: one BFS from every
 * source, stopping once every goal is queued: a goal's path is settled when
 * it is reached, and the queue is first in, first out, so listing the goals
 * in queue order is listing them in the order the search would pop them. */
static PyObject *
ws_shortest_paths(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Workspace *w = (Workspace *)self;
    PyObject *out = NULL;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "shortest_paths(sources, goals) takes 2 arguments");
        return NULL;
    }
    if (ws_check(w) < 0) {
        return NULL;
    }
    uint32_t epoch = ws_next_epoch(w);
    mark_ctx goals = {w, 0};
    if (for_each_id(args[1], w->g.n, visit_mark, &goals) < 0) {
        return NULL;
    }
    Py_ssize_t wanted = goals.count, reached = 0;
    seed_ctx ctx = {w, 0};
    if (for_each_id(args[0], w->g.n, visit_seed, &ctx) < 0) {
        return NULL;
    }
    /* The goals reached, in the order the queue meets them (the order of the
     * result): a component's 10^6 sources are then not scanned again for them.
     * An array of this call's own: making the result's objects may run code. */
    uint32_t *reached_goals = (uint32_t *)PyMem_RawMalloc(((size_t)wanted + 1) * sizeof(uint32_t));
    if (reached_goals == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    Py_ssize_t head = 0, tail = ctx.tail;
    for (Py_ssize_t i = 0; i < tail; i++) {
        uint32_t u = w->queue[i];
        w->parent[u] = UINT32_MAX;
        if (ws_is_member(w, u)) {
            reached_goals[reached++] = u;
        }
    }
    while (head < tail && reached < wanted) {
        uint32_t u = w->queue[head++];
        for (int64_t e = w->g.off[u]; e < w->g.off[u + 1]; e++) {
            int64_t v = w->g.tgt[e];
            if (w->stamp[v] != epoch) {
                w->stamp[v] = epoch;
                w->parent[v] = u;
                w->queue[tail++] = (uint32_t)v;
                if (ws_is_member(w, v)) {
                    reached_goals[reached++] = (uint32_t)v;
                }
            }
        }
    }
    out = PyDict_New();
    if (out == NULL) {
        PyMem_RawFree(reached_goals);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < reached; i++) {
        uint32_t u = reached_goals[i];
        Py_ssize_t length = 1;
        for (uint32_t v = u; w->parent[v] != UINT32_MAX; v = w->parent[v]) {
            length++;
        }
        PyObject *path = PyList_New(length);
        if (path == NULL) {
            goto fail;
        }
        uint32_t v = u;
        for (Py_ssize_t k = length - 1; k >= 0; k--) {
            PyObject *index = PyLong_FromUnsignedLong(v);
            if (index == NULL) {
                Py_DECREF(path);
                goto fail;
            }
            PyList_SET_ITEM(path, k, index);
            v = w->parent[v];
        }
        PyObject *key = PyLong_FromUnsignedLong(u);
        int failed = key == NULL || PyDict_SetItem(out, key, path) < 0;
        Py_XDECREF(key);
        Py_DECREF(path);
        if (failed) {
            goto fail;
        }
    }
    PyMem_RawFree(reached_goals);
    return out;
fail:
    PyMem_RawFree(reached_goals);
    Py_DECREF(out);
    return NULL;
}

/* path_ends(source, goal, keep) -> None | (length, head, tail): the shortest
 * path from source to goal (length in edges), as its first ``keep`` + 1 nodes
 * and its last ``keep`` + 1 nodes; a path of at most 2 * keep + 1 nodes is
 * whole in head and tail is empty. No list of a long path is ever built. */
static PyObject *
ws_path_ends(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Workspace *w = (Workspace *)self;
    Py_ssize_t source, goal, keep;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "path_ends(source, goal, keep) takes 3 arguments");
        return NULL;
    }
    if (ws_check(w) < 0) {
        return NULL;
    }
    source = PyNumber_AsSsize_t(args[0], PyExc_IndexError);
    goal = PyNumber_AsSsize_t(args[1], PyExc_IndexError);
    keep = PyNumber_AsSsize_t(args[2], PyExc_OverflowError);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (source < 0 || source >= w->g.n || goal < 0 || goal >= w->g.n || keep < 1) {
        PyErr_SetString(PyExc_IndexError, "path_ends: node out of range or keep < 1");
        return NULL;
    }
    uint32_t epoch = ws_next_epoch(w);
    Py_ssize_t head = 0, tail = 1;
    w->stamp[source] = epoch;
    w->parent[source] = UINT32_MAX;
    w->queue[0] = (uint32_t)source;
    int found = source == goal;
    /* The BFS's depth, counted level by level: the path's length is known when the
     * goal is met, without a walk back along a 10^6-hop loop to count it. */
    Py_ssize_t length = 0, level_end = tail;
    while (head < tail && !found) {
        if (head == level_end) {
            length++;
            level_end = tail;
        }
        uint32_t u = w->queue[head++];
        for (int64_t e = w->g.off[u]; e < w->g.off[u + 1]; e++) {
            int64_t v = w->g.tgt[e];
            if (w->stamp[v] != epoch) {
                w->stamp[v] = epoch;
                w->parent[v] = u;
                w->queue[tail++] = (uint32_t)v;
                if (v == goal) {
                    found = 1;
                    length++;
                    break;
                }
            }
        }
    }
    if (!found) {
        Py_RETURN_NONE;
    }
    /* Walking back from the goal gives the path reversed: the tail first. */
    Py_ssize_t nodes = length + 1, whole = nodes <= 2 * (keep + 1);
    Py_ssize_t nhead = whole ? nodes : keep + 1, ntail = whole ? 0 : keep + 1;
    PyObject *first = PyList_New(nhead), *last = PyList_New(ntail);
    if (first == NULL || last == NULL) {
        Py_XDECREF(first);
        Py_XDECREF(last);
        return NULL;
    }
    Py_ssize_t position = nodes - 1;
    for (uint32_t v = (uint32_t)goal;; v = w->parent[v], position--) {
        PyObject *list = NULL;
        Py_ssize_t index = 0;
        if (position < nhead) {
            list = first;
            index = position;
        } else if (position >= nodes - ntail) {
            list = last;
            index = position - (nodes - ntail);
        }
        if (list != NULL) {
            PyObject *id = PyLong_FromUnsignedLong(v);
            if (id == NULL) {
                Py_DECREF(first);
                Py_DECREF(last);
                return NULL;
            }
            PyList_SET_ITEM(list, index, id);
        }
        if (w->parent[v] == UINT32_MAX) {
            break;
        }
    }
    PyObject *result = Py_BuildValue("(nNN)", length, first, last);
    return result;
}

typedef struct {
    Workspace *w;
    classes_t *c;
    Py_ssize_t count;
    PyTypeObject *last_type; /* consecutive members are mostly of one type */
    int64_t last_index;
    int has_dict;
    int ascending;
} member_ctx;

/* Member s, of type index t, stamped and queued; the members' order and whether a dict
 * is among them kept in *ascending and *has_dict (registers where this is inlined). */
static inline void
mark_member(Workspace *w, Py_ssize_t s, uint32_t t, Py_ssize_t *count, int *ascending,
            int *has_dict)
{
    w->member[s] = ((uint64_t)w->epoch << 32) | t;
    *ascending &= *count == 0 || (uint32_t)s > w->queue[*count - 1];
    w->queue[(*count)++] = (uint32_t)s;
    *has_dict |= (int64_t)t == w->dict_type;
}

static int
visit_member(void *ctx, Py_ssize_t s)
{
    member_ctx *m = (member_ctx *)ctx;
    Workspace *w = m->w;
    if (ws_is_member(w, s)) {
        return 0;
    }
    int64_t t;
    if (w->node_types != NULL) {
        t = (int64_t)w->node_types[s];
    } else {
        /* Members usually come ascending (as cycle_candidates lists them): the
         * objects a few ahead are fetched while this one is read. */
        if (s + 8 < w->g.n) {
            PREFETCH(PyList_GET_ITEM(w->nodes, s + 8));
        }
        PyTypeObject *tp = Py_TYPE(PyList_GET_ITEM(w->nodes, s));
        t = tp == m->last_type ? m->last_index : type_index(m->c, tp);
        if (t < 0) {
            return -1;
        }
        m->last_type = tp;
        m->last_index = t;
    }
    mark_member(w, s, (uint32_t)t, &m->count, &m->ascending, &m->has_dict);
    return 0;
}

/* visit_member over an int64 buffer of ids when the build recorded the node types
 * (the members cycle_candidates lists): the same mark_member, with the loop's state in
 * registers, not in the context an indirect call would have to reload (marking 10^6
 * members took 5 ms of edge_classes' 19.5 on a list). 1 when done, 0 when the members
 * are no such buffer (nothing marked), -1 with an error. */
static int
mark_members_in_place(Workspace *w, PyObject *members, member_ctx *m)
{
    Py_buffer view;
    if (w->node_types == NULL || !PyObject_CheckBuffer(members)) {
        return 0;
    }
    if (get_i64_buffer(members, &view, "ids") < 0) {
        PyErr_Clear(); /* another kind of buffer: for_each_id iterates it */
        return 0;
    }
    const int64_t *ids = (const int64_t *)view.buf;
    Py_ssize_t count = view.len / 8, n = w->g.n, k = m->count;
    int ascending = m->ascending, has_dict = m->has_dict;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t s = ids[i];
        if (s < 0 || s >= (int64_t)n) {
            PyErr_Format(PyExc_IndexError, "seed %lld out of range for %zd nodes", (long long)s, n);
            PyBuffer_Release(&view);
            return -1;
        }
        if (!ws_is_member(w, s)) { /* else a repeat */
            mark_member(w, s, w->node_types[s], &k, &ascending, &has_dict);
        }
    }
    PyBuffer_Release(&view);
    m->count = k;
    m->ascending = ascending;
    m->has_dict = has_dict;
    return 1;
}

/* The attribute dict ``obj`` keeps apart, or NULL; never makes one (3.11+ keep the
 * attributes of most instances inline, with no dict until one is asked for). */
static PyObject *
instance_dict_of(PyObject *obj)
{
    PyTypeObject *tp = Py_TYPE(obj);
    if (PyType_Check(obj)) {
        return NULL; /* a class's namespace is not an instance's attributes */
    }
#if PY_VERSION_HEX >= 0x030B0000
    if (tp->tp_flags & Py_TPFLAGS_MANAGED_DICT) {
        /* The managed dict slot, three words before the object (3.11-3.14), the word
         * before it without the GIL (no GC header there). On 3.12 it may hold the inline
         * values' pointer, tagged by its low bit: never a dict. */
#ifdef Py_GIL_DISABLED
        return ((PyObject **)obj)[-1];
#else
        return ((PyObject **)obj)[-3];
#endif
    }
#endif
    if (tp->tp_dictoffset == 0) {
        return NULL;
    }
    PyObject **slot = _PyObject_GetDictPtr(obj);
    return slot != NULL ? *slot : NULL;
}

/* Marks in member[] each member dict that is another member's attribute dict
 * (OWNED_DICT, with that member's type): those dicts' references are then classed
 * by the class whose attributes they are (a tree's leaves and their helpers each
 * hold one reference to a node, under names of their own). */
static void
ws_mark_dict_owners(Workspace *w, Py_ssize_t nmembers)
{
    for (Py_ssize_t i = 0; i < nmembers; i++) {
        uint32_t u = w->queue[i];
        int32_t owner = ws_type(w, u);
        if (owner == w->dict_type) {
            continue;
        }
        PyObject *attrs = instance_dict_of(PyList_GET_ITEM(w->nodes, u));
        if (attrs == NULL) {
            continue;
        }
        for (int64_t e = w->g.off[u]; e < w->g.off[u + 1]; e++) {
            int64_t v = w->g.tgt[e];
            if (ws_is_member(w, v) && PyList_GET_ITEM(w->nodes, v) == attrs) {
                if (ws_type(w, v) == w->dict_type) {
                    w->member[v] = ((uint64_t)w->epoch << 32) | OWNED_DICT | (uint32_t)owner;
                }
                break;
            }
        }
    }
}

/* Marks the members (in the order given, repeats dropped) and their types, in
 * queue and member[], attribute dicts with their instances' types (OWNED_DICT);
 * the same read-only buffer again, with nothing run on the workspace in between,
 * is already marked. */
static Py_ssize_t
ws_members(Workspace *w, PyObject *members)
{
    if (members == w->marked_by && w->epoch == w->marked_epoch) {
        return w->marked_count;
    }
    Py_CLEAR(w->marked_by);
    ws_next_epoch(w);
    if (w->dict_type < 0) {
        w->dict_type = type_index(&w->types, &PyDict_Type);
        if (w->dict_type < 0) {
            return -1;
        }
    }
    member_ctx ctx = {w, &w->types, 0, NULL, 0, 0, 1};
    int marked = mark_members_in_place(w, members, &ctx);
    if (marked < 0 || (!marked && for_each_id(members, w->g.n, visit_member, &ctx) < 0)) {
        return -1;
    }
    w->members_ascending = ctx.ascending;
    if (ctx.has_dict) { /* nothing is read when no member is a dict */
        ws_mark_dict_owners(w, ctx.count);
    }
    Py_buffer view;
    if (PyObject_CheckBuffer(members) && PyObject_GetBuffer(members, &view, PyBUF_SIMPLE) == 0) {
        if (view.readonly) {
            Py_INCREF(members);
            w->marked_by = members;
            w->marked_epoch = w->epoch;
            w->marked_count = ctx.count;
        }
        PyBuffer_Release(&view);
    }
    PyErr_Clear();
    return ctx.count;
}

/* Runs BODY for every edge u -> v from node u to a member, in CSR order, with
 * e its position and key its class key. Each target is read once (membership
 * and type in one word); FAIL runs when the scratch cannot grow. */
#define FOR_NODE_EDGES(w, node, BODY, FAIL)                                            \
    do {                                                                               \
        uint32_t u = (node);                                                           \
        int64_t start_ = (w)->g.off[u], end_ = (w)->g.off[u + 1];                      \
        if (ws_scratch((w), (size_t)(end_ - start_)) < 0) {                            \
            FAIL;                                                                      \
        }                                                                              \
        Py_ssize_t deg_ = 0;                                                           \
        for (int64_t e_ = start_; e_ < end_; e_++) {                                   \
            if (e_ + 16 < (w)->g.m) {                                                  \
                PREFETCH(&(w)->member[(w)->g.tgt[e_ + 16]]);                           \
            }                                                                          \
            int64_t target_ = (w)->g.tgt[e_];                                          \
            if (ws_is_member((w), target_)) {                                          \
                (w)->scratch_e[deg_] = e_;                                             \
                (w)->scratch_t[deg_++] = ws_type((w), target_);                        \
            }                                                                          \
        }                                                                              \
        int capped_ = deg_ > CLASS_CAP + 1 ? CLASS_CAP + 1 : (int)deg_;                \
        uint32_t source_word_ = (uint32_t)(w)->member[u];                              \
        int32_t source_type_ = (int32_t)(source_word_ & ~OWNED_DICT);                  \
        if (source_word_ & OWNED_DICT) {                                               \
            capped_ |= CLASS_OF_DICT;                                                  \
        }                                                                              \
        for (Py_ssize_t pos_ = 0; pos_ < deg_; pos_++) {                               \
            int64_t e = (w)->scratch_e[pos_];                                          \
            int64_t v = (w)->g.tgt[e];                                                 \
            uint64_t key = class_key(source_type_, (w)->scratch_t[pos_],               \
                                     pos_ > CLASS_CAP ? CLASS_CAP : (int)pos_, capped_); \
            BODY                                                                       \
        }                                                                              \
    } while (0)

/* FOR_NODE_EDGES over every member, in the order given. */
#define FOR_MEMBER_EDGES(w, count, BODY, FAIL)                                         \
    for (Py_ssize_t member_ = 0; member_ < (count); member_++) {                       \
        FOR_NODE_EDGES(w, (w)->queue[member_], BODY, FAIL);                            \
    }

/* del list[1::2] */
static int
keep_even_items(PyObject *list)
{
    Py_ssize_t size = PyList_GET_SIZE(list), keep = 0;
    for (Py_ssize_t k = 0; k < size; k += 2) {
        PyObject *item = PyList_GET_ITEM(list, k);
        Py_INCREF(item);
        if (PyList_SetItem(list, keep++, item) < 0) {
            return -1;
        }
    }
    return PyList_SetSlice(list, keep, size, NULL);
}

/* edge_classes' arrays per class id doubled, the new part of count and turns zeroed;
 * -1 with MemoryError (what could grow has, and stays the caller's to free). */
static int
grow_class_arrays(int64_t **count, int64_t **stride, uint64_t **order, int64_t **turns,
                  size_t *ccap)
{
    size_t ncap = *ccap * 2;
    int64_t *ncount = (int64_t *)PyMem_RawRealloc(*count, ncap * sizeof(int64_t));
    if (ncount != NULL) {
        *count = ncount;
    }
    int64_t *nstride = (int64_t *)PyMem_RawRealloc(*stride, ncap * sizeof(int64_t));
    if (nstride != NULL) {
        *stride = nstride;
    }
    uint64_t *norder = (uint64_t *)PyMem_RawRealloc(*order, ncap * sizeof(uint64_t));
    if (norder != NULL) {
        *order = norder;
    }
    int64_t *nturns = (int64_t *)PyMem_RawRealloc(*turns, 2 * ncap * sizeof(int64_t));
    if (nturns != NULL) {
        *turns = nturns;
    }
    if (ncount == NULL || nstride == NULL || norder == NULL || nturns == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(*count + *ccap, 0, (ncap - *ccap) * sizeof(int64_t));
    memset(*turns + 2 * *ccap, 0, 2 * (ncap - *ccap) * sizeof(int64_t));
    *ccap = ncap;
    return 0;
}

/* edge_classes(members, samples) -> (keys, counts, samples): classes of the
 * edges between members, keyed (source type, target type, position, degree),
 * ids in order of first edge. samples[c] holds up to ``samples`` (u, v, edge)
 * triples spread over the class in one pass: every stride-th edge is kept, and
 * when twice ``samples`` are kept every other one is dropped and the stride
 * doubles; at the end every other one is dropped until at most ``samples``. */
static PyObject *
ws_edge_classes(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Workspace *w = (Workspace *)self;
    classes_t c;
    int64_t *count = NULL, *stride = NULL;
    uint64_t *order = NULL;
    int64_t *turns = NULL;
    PyObject *result = NULL, *keys = NULL, *counts = NULL, *samples = NULL;
    Py_ssize_t want, nmembers;
    size_t ccap = 16;

    memset(&c, 0, sizeof(c));
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "edge_classes(members, samples) takes 2 arguments");
        return NULL;
    }
    if (ws_check(w) < 0) {
        return NULL;
    }
    want = PyNumber_AsSsize_t(args[1], PyExc_OverflowError);
    if (want == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (want < 1) {
        PyErr_SetString(PyExc_ValueError, "samples must be at least 1");
        return NULL;
    }
    nmembers = ws_members(w, args[0]);
    samples = PyList_New(0);
    count = (int64_t *)PyMem_RawCalloc(ccap, sizeof(int64_t));
    stride = (int64_t *)PyMem_RawCalloc(ccap, sizeof(int64_t));
    order = (uint64_t *)PyMem_RawCalloc(ccap, sizeof(uint64_t));
    turns = (int64_t *)PyMem_RawCalloc(2 * ccap, sizeof(int64_t));
    if (nmembers < 0 || samples == NULL) {
        goto done;
    }
    if (count == NULL || stride == NULL || order == NULL || turns == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    w->edge_class_epoch = 0;
    if (w->edge_class == NULL && w->g.m > 0) {
        w->edge_class = (uint8_t *)big_alloc((size_t)w->g.m, 0);
        if (w->edge_class == NULL) {
            PyErr_Clear(); /* the peeling then classifies each edge itself */
        }
    }
    uint8_t *edge_class = w->edge_class;
    if (edge_class != NULL) {
        /* Members usually come ascending (as cycle_candidates lists them): one
         * memset per run of consecutive nodes, not one call per member. */
        for (Py_ssize_t i = 0; i < nmembers;) {
            uint32_t u = w->queue[i], last = u;
            for (i++; i < nmembers && w->queue[i] == last + 1; i++) {
                last++;
            }
            memset(edge_class + w->g.off[u], EDGE_OUTSIDE, (size_t)(w->g.off[last + 1] - w->g.off[u]));
        }
    }
    /* A structure's members mostly repeat one class per position (a doubly
     * linked list's .prev and .next alternate): the last key seen at each
     * position is checked before the table. */
    uint64_t last_key[CLASS_CAP + 1];
    int64_t last_id[CLASS_CAP + 1];
    for (int k = 0; k <= CLASS_CAP; k++) {
        last_key[k] = CLASS_EMPTY;
        last_id[k] = -1;
    }
    FOR_MEMBER_EDGES(w, nmembers, {
        int slot = KEY_POSITION(key);
        int64_t id = last_id[slot];
        if (key != last_key[slot]) {
            class_lookups++;
            size_t known = c.nclasses;
            id = class_id(&c, key, 1);
            if (id < 0) {
                goto done;
            }
            last_key[slot] = key;
            last_id[slot] = id;
            /* A new class (ids come in order): its arrays and samples set up here,
             * off the path every edge takes. */
            if ((size_t)id >= known) {
                if (id >= EDGE_OUTSIDE) {
                    edge_class = NULL; /* too many classes for a byte: not kept */
                }
                if ((size_t)id >= ccap && grow_class_arrays(&count, &stride, &order, &turns, &ccap) < 0) {
                    goto done;
                }
                PyObject *list = PyList_New(0);
                if (list == NULL || PyList_Append(samples, list) < 0) {
                    Py_XDECREF(list);
                    goto done;
                }
                Py_DECREF(list);
                order[id] = key;
                stride[id] = 1;
            }
        }
        if (edge_class != NULL) {
            edge_class[e] = (uint8_t)id;
        }
        turns[2 * id + NOT_RISING] += (int64_t)u >= v;
        turns[2 * id + NOT_FALLING] += (int64_t)u <= v;
        int64_t index = count[id]++;
        if ((index & (stride[id] - 1)) == 0) { /* strides are powers of two */
            PyObject *list = PyList_GET_ITEM(samples, id);
            PyObject *triple = Py_BuildValue("(kLL)", (unsigned long)u, (long long)v, (long long)e);
            if (triple == NULL || PyList_Append(list, triple) < 0) {
                Py_XDECREF(triple);
                goto done;
            }
            Py_DECREF(triple);
            if (PyList_GET_SIZE(list) == 2 * want) {
                /* Items 0, 2, 4, ... are the edges of the doubled stride. */
                if (keep_even_items(list) < 0) {
                    goto done;
                }
                stride[id] *= 2;
            }
        }
    }, goto done)
    keys = PyList_New((Py_ssize_t)c.nclasses);
    counts = PyList_New((Py_ssize_t)c.nclasses);
    if (keys == NULL || counts == NULL) {
        goto done;
    }
    for (size_t id = 0; id < c.nclasses; id++) {
        uint64_t key = order[id];
        PyObject *entry = Py_BuildValue("(OOii)", (PyObject *)w->types.types[KEY_SOURCE(key)],
                                        (PyObject *)w->types.types[KEY_TARGET(key)],
                                        KEY_POSITION(key), KEY_DEGREE(key));
        PyObject *n = PyLong_FromLongLong((long long)count[id]);
        if (entry == NULL || n == NULL) {
            Py_XDECREF(entry);
            Py_XDECREF(n);
            goto done;
        }
        PyList_SET_ITEM(keys, (Py_ssize_t)id, entry);
        PyList_SET_ITEM(counts, (Py_ssize_t)id, n);
        PyObject *list = PyList_GET_ITEM(samples, (Py_ssize_t)id);
        while (PyList_GET_SIZE(list) > want) {
            if (keep_even_items(list) < 0) {
                goto done;
            }
        }
    }
    result = PyTuple_Pack(3, keys, counts, samples);
    if (result != NULL && edge_class != NULL) {
        uint64_t *class_keys = (uint64_t *)PyMem_RawRealloc(w->class_keys,
                                                            (c.nclasses + 1) * sizeof(uint64_t));
        if (class_keys != NULL) {
            w->class_keys = class_keys;
        }
        int64_t *class_turns = (int64_t *)PyMem_RawRealloc(w->class_turns,
                                                           (2 * c.nclasses + 1) * sizeof(int64_t));
        if (class_turns != NULL) {
            w->class_turns = class_turns;
        }
        if (class_keys != NULL && class_turns != NULL) {
            memcpy(class_keys, order, c.nclasses * sizeof(uint64_t));
            memcpy(class_turns, turns, 2 * c.nclasses * sizeof(int64_t));
            w->nclass_keys = c.nclasses;
            w->edge_class_epoch = w->epoch;
        }
    }
done:
    Py_XDECREF(keys);
    Py_XDECREF(counts);
    Py_XDECREF(samples);
    PyMem_RawFree(count);
    PyMem_RawFree(stride);
    PyMem_RawFree(order);
    PyMem_RawFree(turns);
    classes_free(&c);
    return result;
}

/* Whether node ids rise along every edge kept among the members edge_classes
 * numbered (or fall along every one): then no loop is left, and no peeling is
 * needed (a list built in order without its .prev, a tree without its
 * .parent). extra: the removed edge positions, ascending. */
static int
rises_or_falls(const Workspace *w, const uint8_t *removed_id, const int64_t *extra,
               Py_ssize_t nextra)
{
    int64_t not_rising = 0, not_falling = 0;
    for (size_t id = 0; id < w->nclass_keys; id++) {
        if (!removed_id[id]) {
            not_rising += w->class_turns[2 * id + NOT_RISING];
            not_falling += w->class_turns[2 * id + NOT_FALLING];
        }
    }
    for (Py_ssize_t i = 0; i < nextra; i++) {
        int64_t e = extra[i];
        if (i > 0 && extra[i - 1] == e) {
            continue; /* counted once */
        }
        /* The edge's source: the last node whose edges start at or before e. */
        Py_ssize_t lo = 0, hi = w->g.n;
        while (hi - lo > 1) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            if (w->g.off[mid] <= e) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        /* Only the members' edges have a class byte (edge_classes wrote no other);
         * an edge from outside is none of the members' loops. */
        if (!ws_is_member(w, lo)) {
            continue;
        }
        uint8_t id = w->edge_class[e];
        if (id == EDGE_OUTSIDE || removed_id[id]) {
            continue; /* only an edge that was kept is taken out */
        }
        not_rising -= (int64_t)lo >= w->g.tgt[e];
        not_falling -= (int64_t)lo <= w->g.tgt[e];
    }
    return not_rising == 0 || not_falling == 0;
}

/* acyclic_without(members, removed, removed_edges) -> bool: whether no loop is
 * left among the members once every edge whose class key (source type, target
 * type, position, degree) is in ``removed``, and every edge position in
 * ``removed_edges``, is gone (Kahn's peeling over the members only). */
static PyObject *
ws_acyclic_without(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Workspace *w = (Workspace *)self;
    classes_t c;
    int64_t *extra = NULL;
    Py_ssize_t nextra = 0, nmembers;
    PyObject *result = NULL, *seq = NULL, *edges = NULL;
    uint32_t *peel = NULL;
    uint64_t *kept = NULL;
    uint8_t removed_id[EDGE_OUTSIDE];
    memset(removed_id, 0, sizeof(removed_id));

    memset(&c, 0, sizeof(c));
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError,
                        "acyclic_without(members, removed, removed_edges) takes 3 arguments");
        return NULL;
    }
    if (ws_check(w) < 0) {
        return NULL;
    }
    seq = PySequence_Fast(args[1], "removed must be a sequence of class keys");
    if (seq == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *src, *dst;
        int pos, deg;
        if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "OOii", &src, &dst, &pos, &deg)) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "a class key is (type, type, position, degree)");
            }
            goto done;
        }
        if (!PyType_Check(src) || !PyType_Check(dst) || pos < 0 || pos > CLASS_CAP || deg < 0 ||
            (deg & ~CLASS_OF_DICT) > CLASS_CAP + 1) {
            PyErr_SetString(PyExc_ValueError, "a class key is (type, type, position, degree)");
            goto done;
        }
        /* A type no member has gets an index too: its key then matches no edge. */
        int64_t s = type_index(&w->types, (PyTypeObject *)src);
        int64_t d = type_index(&w->types, (PyTypeObject *)dst);
        uint64_t key = class_key((int32_t)s, (int32_t)d, pos, deg);
        if (s < 0 || d < 0 || class_id(&c, key, 1) < 0) {
            goto done;
        }
        for (size_t id = 0; id < w->nclass_keys; id++) {
            if (w->class_keys[id] == key) {
                removed_id[id] = 1;
            }
        }
    }
    if (args[2] != Py_None) {
        edges = PySequence_Fast(args[2], "removed_edges must be a sequence of edge positions");
        if (edges == NULL) {
            goto done;
        }
        nextra = PySequence_Fast_GET_SIZE(edges);
        extra = (int64_t *)PyMem_RawMalloc(((size_t)nextra + 1) * sizeof(int64_t));
        if (extra == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < nextra; i++) {
            Py_ssize_t e = PyNumber_AsSsize_t(PySequence_Fast_GET_ITEM(edges, i), PyExc_IndexError);
            if (e == -1 && PyErr_Occurred()) {
                goto done;
            }
            if (e < 0 || e >= w->g.m) {
                PyErr_Format(PyExc_IndexError, "edge %zd out of range for %zd edges", e, w->g.m);
                goto done;
            }
            extra[i] = e;
        }
        qsort(extra, (size_t)nextra, sizeof(int64_t), cmp_i64);
    }
    /* Marked last: reading the arguments above may run Python code (an __index__)
     * that uses this workspace, or closes it, and nothing after this runs any. */
    if (ws_check(w) < 0) {
        goto done;
    }
    nmembers = ws_members(w, args[0]);
    if (nmembers < 0) {
        goto done;
    }
    if (w->edge_class_epoch == w->epoch && rises_or_falls(w, removed_id, extra, nextra)) {
        result = Py_NewRef(Py_True);
        goto done;
    }
    peels++;
    /* The members' order lives in queue; the peeling needs its own queue. */
    peel = (uint32_t *)big_alloc(((size_t)nmembers + 1) * sizeof(uint32_t), 0);
    if (peel == NULL) {
        goto done;
    }
    /* The edges kept, one bit per edge position: decided once, with their class
     * keys, so the peeling reads neither member[] nor the class table. */
    kept = (uint64_t *)PyMem_RawCalloc((size_t)w->g.m / 64 + 1, sizeof(uint64_t));
    if (kept == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    uint32_t *indegree = w->parent;
    for (Py_ssize_t i = 0; i < nmembers; i++) {
        indegree[w->queue[i]] = 0;
    }
    if (w->edge_class_epoch == w->epoch) {
        /* The members edge_classes numbered: each edge's class is one byte. */
        for (Py_ssize_t i = 0; i < nmembers; i++) {
            uint32_t u = w->queue[i];
            for (int64_t e = w->g.off[u]; e < w->g.off[u + 1]; e++) {
                uint8_t id = w->edge_class[e];
                if (id != EDGE_OUTSIDE && !removed_id[id]) {
                    indegree[w->g.tgt[e]]++;
                    kept[e >> 6] |= (uint64_t)1 << (e & 63);
                }
            }
        }
    } else {
        FOR_MEMBER_EDGES(w, nmembers, {
            if (class_id(&c, key, 0) < 0) {
                indegree[v]++;
                kept[e >> 6] |= (uint64_t)1 << (e & 63);
            }
        }, goto done)
    }
    /* The removed edges kept so far go again (only members' edges have a bit). */
    for (Py_ssize_t i = 0; i < nextra; i++) {
        int64_t e = extra[i];
        if ((kept[e >> 6] >> (e & 63)) & 1) {
            kept[e >> 6] &= ~((uint64_t)1 << (e & 63));
            indegree[w->g.tgt[e]]--;
        }
    }
    /* Kahn's peeling, led by a scan of the members in their order: a node freed
     * (in-degree 0) that the scan has yet to reach waits for it, others are peeled
     * at once (from a stack). Where the members ascend and most kept edges rise
     * (a list, a tree, built in order), the scan peels them one after the other,
     * its next node known before the last one is done, where a queue would have
     * to follow each node's edge to find the next. */
    const int ascending = w->members_ascending;
    Py_ssize_t peeled = 0, stacked = 0;
    for (Py_ssize_t i = 0; i < nmembers; i++) {
        uint32_t s = w->queue[i];
        if (indegree[s] != 0) {
            continue; /* still held, or peeled already */
        }
        indegree[s] = PEELED;
        peel[stacked++] = s;
        while (stacked > 0) {
            uint32_t u = peel[--stacked];
            peeled++;
            for (int64_t e = w->g.off[u]; e < w->g.off[u + 1]; e++) {
                if ((kept[e >> 6] >> (e & 63)) & 1) {
                    int64_t v = w->g.tgt[e];
                    if (--indegree[v] == 0 && (!ascending || v < (int64_t)s)) {
                        indegree[v] = PEELED;
                        peel[stacked++] = (uint32_t)v;
                    }
                }
            }
        }
    }
    result = PyBool_FromLong(peeled == nmembers);
done:
    Py_XDECREF(seq);
    Py_XDECREF(edges);
    PyMem_RawFree(extra);
    big_free(peel);
    PyMem_RawFree(kept);
    classes_free(&c);
    return result;
}

static PyObject *
ws_close(PyObject *self, PyObject *unused)
{
    (void)unused;
    ws_close_impl((Workspace *)self);
    Py_RETURN_NONE;
}

static PyMethodDef ws_methods[] = {
    {"reach", (PyCFunction)(void (*)(void))ws_reach, METH_FASTCALL,
     "reach(sources, wanted, blocked, limit=None) -> [node, ...]"},
    {"cycle_keys", (PyCFunction)(void (*)(void))ws_cycle_keys, METH_FASTCALL,
     "cycle_keys(groups, wanted, blocked, limit, specific, big_members, big_edges, keep_empty)"
     " -> [(key, members, retained), ...]"},
    {"shortest_paths", (PyCFunction)(void (*)(void))ws_shortest_paths, METH_FASTCALL,
     "shortest_paths(sources, goals) -> {goal: [node, ...]}"},
    {"path_ends", (PyCFunction)(void (*)(void))ws_path_ends, METH_FASTCALL,
     "path_ends(source, goal, keep) -> None | (length, head, tail)"},
    {"edge_classes", (PyCFunction)(void (*)(void))ws_edge_classes, METH_FASTCALL,
     "edge_classes(members, samples) -> (keys, counts, samples)"},
    {"acyclic_without", (PyCFunction)(void (*)(void))ws_acyclic_without, METH_FASTCALL,
     "acyclic_without(members, removed, removed_edges) -> bool"},
    {"close", ws_close, METH_NOARGS, "close() -> None: drop the nodes and the scratch arrays"},
    {NULL, NULL, 0, NULL},
};

static PyObject *
ws_get_build_types(PyObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(((Workspace *)self)->node_types != NULL);
}

static PyGetSetDef ws_getset[] = {
    {"build_types", ws_get_build_types, NULL,
     "Whether members' types are read from the build's record, not from the objects.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject Workspace_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "whyalive.graph._fastgraph.Workspace",
    .tp_basicsize = sizeof(Workspace),
    .tp_dealloc = ws_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Workspace(nodes, offsets, targets, component_of): per-component graph work.",
    .tp_methods = ws_methods,
    .tp_getset = ws_getset,
    .tp_new = ws_new,
};

/* ------------------------------------------------------------------ */

/* hold_scratch(held) -> int: the holds left. True: mapped arrays freed from
 * now on are kept for the next ones (see pool_keep); False: one hold given
 * back, and with the last one every kept piece is unmapped. */
static PyObject *
fg_hold_scratch(PyObject *self, PyObject *held)
{
    (void)self;
    int hold = PyObject_IsTrue(held);
    if (hold < 0) {
        return NULL;
    }
    if (hold) {
        pool_holds++;
    } else if (pool_holds > 0 && --pool_holds == 0) {
        pool_flush();
    }
    return PyLong_FromSsize_t(pool_holds);
}

/* work_counts() -> dict: work done so far, for tests that count it. */
static PyObject *
fg_work_counts(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return Py_BuildValue("{sKsKsKsK}", "csr_checks", (unsigned long long)csr_checks,
                         "class_lookups", (unsigned long long)class_lookups, "reach_visits",
                         (unsigned long long)reach_visits, "peels", (unsigned long long)peels);
}

/* scratch_pieces() -> (count, bytes): the pieces kept right now. */
static PyObject *
fg_scratch_pieces(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    size_t bytes = 0;
    for (int k = 0; k < pool_count; k++) {
        bytes += pool[k].len;
    }
    return Py_BuildValue("(in)", pool_count, (Py_ssize_t)bytes);
}

static PyMethodDef fg_methods[] = {
    {"hold_scratch", fg_hold_scratch, METH_O,
     "hold_scratch(held) -> holds left: keep freed big arrays for the next ones while held"},
    {"work_counts", fg_work_counts, METH_NOARGS,
     "work_counts() -> {'csr_checks': full CSR checks (a build's own pair is trusted), "
     "'class_lookups': edge-class table lookups, 'reach_visits': nodes reach() expanded, "
     "'peels': acyclic_without calls that peeled}"},
    {"scratch_pieces", fg_scratch_pieces, METH_NOARGS,
     "scratch_pieces() -> (count, bytes) of the big arrays kept for reuse"},
    {"build_graph", (PyCFunction)(void (*)(void))fg_build_graph, METH_FASTCALL,
     "build_graph(objects, follow_types, mark_types, in_place=False, array_type=None, "
     "runs=None) -> (nodes, offsets, targets, marked)"},
    {"node_types", fg_node_types, METH_O,
     "node_types(offsets) -> tuple | None: the distinct types of a built graph's nodes"},
    {"array_head", fg_array_head, METH_O,
     "array_head(array) -> (nd, shape, has_base, owns_data, dtype) as the builder reads them"},
    {"find_components", (PyCFunction)(void (*)(void))fg_find_components, METH_FASTCALL,
     "find_components(offsets, targets) -> (component_of_node, count, cyclic)"},
    {"nodes_reaching", (PyCFunction)(void (*)(void))fg_nodes_reaching, METH_FASTCALL,
     "nodes_reaching(offsets, targets, seeds) -> mask"},
    {"cycle_candidates", (PyCFunction)(void (*)(void))fg_cycle_candidates, METH_FASTCALL,
     "cycle_candidates(offsets, targets, seeds) -> (component_of, cycle_count, members: int64 memoryview)"},
    {"reverse_edges", (PyCFunction)(void (*)(void))fg_reverse_edges, METH_FASTCALL,
     "reverse_edges(offsets, targets) -> (offsets, edges): edge positions by target."},
    {"clear_objects", (PyCFunction)(void (*)(void))fg_clear_objects, METH_FASTCALL,
     "clear_objects(objects) -> None: empty the list, then tp_clear each object and drop "
     "it, as the collector does"},
    {"take_tail", (PyCFunction)(void (*)(void))fg_take_tail, METH_FASTCALL,
     "take_tail(items, start) -> items[start:], removed from items without copying"},
    {"saved_start", (PyCFunction)(void (*)(void))fg_saved_start, METH_FASTCALL,
     "saved_start(items, first, end) -> the first index of the longest tail of "
     "items[first:end] that nothing outside it holds"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fg_module = {
    PyModuleDef_HEAD_INIT,
    "whyalive.graph._fastgraph",
    "C core for whyalive.graph.core; use that module, not this one.",
    -1,
    fg_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__fastgraph(void)
{
    if (PyType_Ready(&BigArray_Type) < 0 || PyType_Ready(&Workspace_Type) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&fg_module);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&Workspace_Type);
    if (PyModule_AddObject(module, "Workspace", (PyObject *)&Workspace_Type) < 0) {
        Py_DECREF(&Workspace_Type);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
