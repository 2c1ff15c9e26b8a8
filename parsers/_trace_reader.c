/* One-pass reader for a chunk of Chrome-trace events: a JSON array of event objects, read
 * against a fixed schema (parsers/chrome_trace.py SCHEMAS) straight into Arrow column buffers.
 *
 * Contract (parsers/trace_native.py builds the frame and states it): where this reader answers,
 * its columns equal those of `pl.read_json(chunk, schema=...)`, value for value; for anything
 * outside the subset below it raises Unsupported and the caller runs polars unchanged. So it
 * declines rather than guesses:
 *   - the document is `[`, objects separated by commas, `]`, JSON whitespace only (no BOM);
 *   - strings must be valid UTF-8 without raw control characters; escapes are the JSON ones,
 *     surrogate pairs must pair (polars turns a lone high surrogate into U+0000);
 *   - keys of the schema must not repeat within an object (polars keeps the first) and must be
 *     written without escapes (an escaped key could spell a schema key);
 *   - String fields take strings, true/false, and integer tokens that fit in 64 bits (polars
 *     prints them as written, "-0" as "0"); polars prints other numbers in its own float
 *     format, which is not reproduced here;
 *   - Int64 fields (and List(Int64) elements) take integer tokens that fit; polars truncates
 *     1.5 to 1 and reads true as 1 and 2**63 as null: all declined;
 *   - Float64 fields take integer tokens that fit in int64 (converted as polars does, so "-0" is
 *     +0.0) and decimal tokens of at most 19 significant digits, converted correctly rounded
 *     (exact fast path, else strtod_l in the C locale); over/underflow is declined;
 *   - List(Int64) takes null or an array (polars wraps a bare number: declined); Struct takes
 *     null or an object whose fields follow the same rules;
 *   - values under keys outside the schema are validated (same string and number rules) and
 *     skipped, nested at most MAX_DEPTH deep.
 * The scan runs without the GIL; every read is bounds-checked against the end of the input and
 * every size computation against overflow (the input is hostile: the fuzz suite runs on it). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <locale.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { K_STR = 0, K_I64 = 1, K_F64 = 2, K_LIST = 3, K_STRUCT = 4 };
#define MAX_FIELDS 64
#define MAX_DEPTH 64
#define MAX_NAME 64
#define HASH_SLOTS 256
#define MAX_UNK 63   /* keys outside the schema remembered per struct, for the key prediction */

/* ------------------------------------------------------------------------------------------ */
/* growable byte buffers, zero-filled as they grow (a null slot then needs no write) */

typedef struct {
    uint8_t *p;
    size_t len, cap;
} Buf;

/* Column memory comes straight from the kernel on Linux (mmap/mremap): pages arrive zeroed (no
 * memset), grow without a copy, and go back to the system when polars drops the column. Through
 * malloc, large blocks freed from several threads stayed in the allocator's arenas: the peak RSS
 * of a 1 GB load was 1.6x polars' own reader's. Capacities are whole pages. */
#if defined(__linux__) && !defined(TRACE_READER_MALLOC)  /* (-DTRACE_READER_MALLOC: for sanitizer builds) */
#include <sys/mman.h>
#define PAGE 4096
static uint8_t *mem_resize(uint8_t *p, size_t old, size_t cap) {
    void *q = p ? mremap(p, old, cap, MREMAP_MAYMOVE) : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return q == MAP_FAILED ? NULL : (uint8_t *)q;
}
static void mem_free(uint8_t *p, size_t cap) { if (p) munmap(p, cap); }
#else
#define PAGE 256
static uint8_t *mem_resize(uint8_t *p, size_t old, size_t cap) {
    uint8_t *q = (uint8_t *)realloc(p, cap);
    if (q && cap > old) memset(q + old, 0, cap - old);
    return q;
}
static void mem_free(uint8_t *p, size_t cap) { (void)cap; free(p); }
#endif

static int buf_grow(Buf *b, size_t need) {
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : PAGE;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) return -1;
        cap *= 2;
    }
    uint8_t *q = mem_resize(b->p, b->cap, cap);
    if (!q) return -1;
    b->p = q;
    b->cap = cap;
    return 0;
}

static void buf_free(Buf *b) {
    mem_free(b->p, b->cap);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* append n bytes */
static int buf_put(Buf *b, const void *src, size_t n) {
    if (n > SIZE_MAX - b->len || buf_grow(b, b->len + n)) return -1;
    memcpy(b->p + b->len, src, n);
    b->len += n;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* the schema and its output columns */

/* keys of a struct outside the schema (skipped), as written: Kineto's args hold a dozen ("Sequence
 * number", "Input Dims", ...), and scanning and hashing each of them cost as much as a kept key */
typedef struct {
    int n;
    uint8_t len[MAX_UNK];
    char name[MAX_UNK][MAX_NAME];
} UnkKeys;

typedef struct Field {
    char name[MAX_NAME];
    size_t namelen;
    int kind;
    int nchild;
    struct Field *child;      /* K_STRUCT: its fields */
    struct Field *parent;     /* the struct holding it (NULL for the top) */
    int8_t slot[HASH_SLOTS];  /* K_STRUCT: key hash -> child index (or -1) */
    /* K_STRUCT: the two keys that followed key k-1 lately, the newest first (k: a child's index,
     * or nchild + an unknown key's; k = 0: the first key of an object; -1: none) */
    int8_t pred[MAX_FIELDS + MAX_UNK + 1][2];
    UnkKeys *unk;             /* K_STRUCT: its unknown keys */
    Buf valid;                /* validity bitmap, one bit per row */
    Buf vals;                 /* STR: 16-byte views; I64/F64: 8 bytes; LIST: int32 offsets */
    Buf data;                 /* STR: bytes of strings longer than 12; LIST: int64 elements */
    Buf cvalid;               /* LIST: element validity bitmap */
    int64_t nvalid;           /* rows with a value */
    int64_t nelem;            /* LIST: elements so far; */
    int64_t nelem_valid;      /* LIST: non-null elements */
    int live;                 /* buffers allocated: at its first value (most args of most events
                               * are absent; a column never seen costs nothing and is all null) */
    int nlive_lists;          /* K_STRUCT: its live List and Struct children, closed per row */
    int8_t live_lists[MAX_FIELDS];
} Field;

typedef struct {
    const uint8_t *p, *end, *start;
    Field top;                /* a struct of the top-level fields */
    int64_t rows, rowcap;
    const char *why;          /* the reason of a decline (a static string) */
    size_t where;             /* its byte offset */
    locale_t cloc;
    char numbuf[80];
} Scan;

static void field_free(Field *f) {
    buf_free(&f->valid);
    buf_free(&f->vals);
    buf_free(&f->data);
    buf_free(&f->cvalid);
    for (int i = 0; i < f->nchild; i++) field_free(&f->child[i]);
    free(f->child);
    free(f->unk);
    f->unk = NULL;
    f->child = NULL;
    f->nchild = 0;
}

/* a few bytes and the length: enough to spread a schema's keys (probing and memcmp settle the
 * rest), and cheaper than hashing every byte of every key of every event */
static unsigned key_hash(const uint8_t *s, size_t n) {
    if (!n) return 0;
    uint32_t h = (uint32_t)n * 0x9E3779B1u ^ (uint32_t)s[0] * 0x85EBCA77u ^ (uint32_t)s[n - 1] * 0xC2B2AE3Du
                 ^ (uint32_t)s[n / 2] * 0x27D4EB2Fu;
    return (h ^ (h >> 15)) & (HASH_SLOTS - 1);
}

/* n bytes equal: keys are short, and a call to memcmp cost more than comparing them here */
static inline int same_bytes(const uint8_t *a, const char *b, size_t n) {
    uint64_t x, y;
    while (n >= 8) {
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) return 0;
        a += 8, b += 8, n -= 8;
    }
    while (n--)
        if (*a++ != (uint8_t)*b++) return 0;
    return 1;
}

/* the name of key k of a struct: a child's (k < nchild) or an unknown key's */
static inline const char *key_name(const Field *st, int k, size_t *n) {
    if (k < st->nchild) {
        *n = st->child[k].namelen;
        return st->child[k].name;
    }
    *n = st->unk->len[k - st->nchild];
    return st->unk->name[k - st->nchild];
}

/* the key k (child or unknown) of a struct whose name is these bytes, or -1 */
static int find_key(const Field *st, const uint8_t *k, size_t n) {
    unsigned h = key_hash(k, n);
    for (unsigned probe = 0; probe < HASH_SLOTS; probe++) {
        int i = st->slot[(h + probe) & (HASH_SLOTS - 1)];
        if (i < 0) return -1;
        size_t len;
        const char *name = key_name(st, i, &len);
        if (len == n && same_bytes(k, name, n)) return i;
    }
    return -1;
}

/* enter key k in the hash table (its name must not be there yet; the table is never full:
 * at most MAX_FIELDS + MAX_UNK < HASH_SLOTS keys) */
static void add_key(Field *st, int k) {
    size_t n;
    const char *name = key_name(st, k, &n);
    unsigned h = key_hash((const uint8_t *)name, n);
    while (st->slot[h] >= 0) h = (h + 1) & (HASH_SLOTS - 1);
    st->slot[h] = (int8_t)k;
}

/* the key of a struct for these bytes, an unknown one added if new; -1 when none (an unknown
 * key too long to keep, or the table of them full: such keys are scanned and hashed each time) */
static int key_index(Field *st, const uint8_t *k, size_t n) {
    int i = find_key(st, k, n);
    if (i >= 0) return i;
    UnkKeys *u = st->unk;
    if (u->n >= MAX_UNK || n >= MAX_NAME) return -1;
    memcpy(u->name[u->n], k, n);
    u->len[u->n] = (uint8_t)n;
    i = st->nchild + u->n++;
    add_key(st, i);
    return i;
}

/* ------------------------------------------------------------------------------------------ */
/* the scan */

#define DECLINE(s, msg) do { (s)->why = (msg); (s)->where = (size_t)((s)->p - (s)->start); return -1; } while (0)

static inline void skip_ws(Scan *s) {
    const uint8_t *p = s->p, *e = s->end;
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    s->p = p;
}

/* the length of a valid UTF-8 sequence starting at p (lead byte >= 0x80), or 0 */
static size_t utf8_len(const uint8_t *p, const uint8_t *e) {
    uint8_t c = p[0];
    if (c >= 0xC2 && c <= 0xDF) {
        if (e - p >= 2 && (p[1] & 0xC0) == 0x80) return 2;
        return 0;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (e - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && p[1] < 0xA0) return 0;  /* overlong */
        if (c == 0xED && p[1] >= 0xA0) return 0; /* UTF-16 surrogate */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (e - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
        if (c == 0xF0 && p[1] < 0x90) return 0;  /* overlong */
        if (c == 0xF4 && p[1] >= 0x90) return 0; /* beyond U+10FFFF */
        return 4;
    }
    return 0;
}

static int hex4(const uint8_t *p, const uint8_t *e, unsigned *out) {
    if (e - p < 4) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

/* SWAR: the bytes of 8 that need a closer look (quote, backslash, control, non-ASCII), as the
 * high bit of each. Only bytes above a flagged one can be flagged wrongly (a borrow), so the
 * lowest flag is exact: on a little-endian machine it locates the first such byte. */
static inline uint64_t special8(uint64_t x) {
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
    uint64_t zq = (q - ones) & ~q, zb = (b - ones) & ~b;
    uint64_t ctl = (x - ones * 0x20) & ~x;
    return (zq | zb | ctl | x) & high;
}

/* Scan a string whose opening quote is at s->p. On success s->p is past the closing quote and
 * `raw` and `rawlen` give the bytes between the quotes; `esc` tells whether any escape occurs. With
 * `out`, the decoded text is appended to it (only needed with escapes). */
static int scan_string(Scan *s, const uint8_t **raw, size_t *rawlen, int *esc, Buf *out) {
    const uint8_t *p = s->p + 1, *e = s->end;
    const uint8_t *begin = p;
    int any_esc = 0;
    for (;;) {
        while (e - p >= 8) {
            uint64_t x, m;
            memcpy(&x, p, 8);
            if ((m = special8(x))) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                p += __builtin_ctzll(m) >> 3;  /* straight to it: most strings are short */
#endif
                break;
            }
            p += 8;
        }
        if (p >= e) { s->p = p; DECLINE(s, "unterminated string"); }
        uint8_t c = *p;
        if (c == '"') break;
        if (c < 0x20) { s->p = p; DECLINE(s, "raw control character in a string"); }
        if (c < 0x80 && c != '\\') { p++; continue; }
        if (c >= 0x80) {
            size_t n = utf8_len(p, e);
            if (!n) { s->p = p; DECLINE(s, "invalid UTF-8 in a string"); }
            p += n;
            continue;
        }
        /* an escape */
        any_esc = 1;
        if (e - p < 2) { s->p = p; DECLINE(s, "unterminated escape"); }
        uint8_t d = p[1];
        if (d == 'u') {
            unsigned u;
            if (hex4(p + 2, e, &u)) { s->p = p; DECLINE(s, "bad \\u escape"); }
            if (u >= 0xDC00 && u <= 0xDFFF) { s->p = p; DECLINE(s, "lone low surrogate"); }
            if (u >= 0xD800 && u <= 0xDBFF) {
                unsigned lo;
                if (e - p < 12 || p[6] != '\\' || p[7] != 'u' || hex4(p + 8, e, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                    s->p = p;
                    DECLINE(s, "unpaired surrogate escape");
                }
                p += 12;
            } else {
                p += 6;
            }
        } else if (d == '"' || d == '\\' || d == '/' || d == 'b' || d == 'f' || d == 'n' || d == 'r' || d == 't') {
            p += 2;
        } else {
            s->p = p;
            DECLINE(s, "invalid escape");
        }
    }
    *raw = begin;
    *rawlen = (size_t)(p - begin);
    *esc = any_esc;
    s->p = p + 1;
    if (out && any_esc) {
        /* decode: the text was validated above, so this pass only translates escapes */
        const uint8_t *q = begin;
        while (q < p) {
            const uint8_t *r = q;
            while (r < p && *r != '\\') r++;
            if (buf_put(out, q, (size_t)(r - q))) DECLINE(s, "out of memory");
            if (r >= p) break;
            uint8_t d = r[1], tmp[4];
            size_t n = 1;
            switch (d) {
            case 'b': tmp[0] = '\b'; break;
            case 'f': tmp[0] = '\f'; break;
            case 'n': tmp[0] = '\n'; break;
            case 'r': tmp[0] = '\r'; break;
            case 't': tmp[0] = '\t'; break;
            case 'u': {
                unsigned u, lo;
                hex4(r + 2, p, &u);
                r += 6;
                if (u >= 0xD800 && u <= 0xDBFF) {
                    hex4(r + 2, p, &lo);
                    u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                    r += 6;
                }
                if (u < 0x80) { tmp[0] = (uint8_t)u; n = 1; }
                else if (u < 0x800) { tmp[0] = (uint8_t)(0xC0 | (u >> 6)); tmp[1] = (uint8_t)(0x80 | (u & 0x3F)); n = 2; }
                else if (u < 0x10000) {
                    tmp[0] = (uint8_t)(0xE0 | (u >> 12)); tmp[1] = (uint8_t)(0x80 | ((u >> 6) & 0x3F));
                    tmp[2] = (uint8_t)(0x80 | (u & 0x3F)); n = 3;
                } else {
                    tmp[0] = (uint8_t)(0xF0 | (u >> 18)); tmp[1] = (uint8_t)(0x80 | ((u >> 12) & 0x3F));
                    tmp[2] = (uint8_t)(0x80 | ((u >> 6) & 0x3F)); tmp[3] = (uint8_t)(0x80 | (u & 0x3F)); n = 4;
                }
                if (buf_put(out, tmp, n)) DECLINE(s, "out of memory");
                q = r;
                continue;
            }
            default: tmp[0] = d; break; /* " \ / */
            }
            if (buf_put(out, tmp, n)) DECLINE(s, "out of memory");
            q = r + 2;
        }
    }
    return 0;
}

/* A number token at s->p, checked against the JSON grammar. */
typedef struct {
    const uint8_t *tok;
    size_t len;
    int neg, is_int;
    uint64_t mant;   /* significant digits, leading zeros dropped (valid when ndig <= 19) */
    int ndig;        /* significant digits */
    int64_t exp10;   /* value = mant * 10**exp10 (when ndig <= 19) */
} Num;

static int scan_number(Scan *s, Num *n) {
    const uint8_t *p = s->p, *e = s->end;
    n->tok = p;
    n->neg = 0;
    n->is_int = 1;
    n->mant = 0;
    n->ndig = 0;
    n->exp10 = 0;
    if (p < e && *p == '-') { n->neg = 1; p++; }
    if (p >= e || *p < '0' || *p > '9') { s->p = p; DECLINE(s, "bad number"); }
    if (*p == '0') {
        p++;
        if (p < e && *p >= '0' && *p <= '9') { s->p = p; DECLINE(s, "number with a leading zero"); }
    } else {
        while (p < e && *p >= '0' && *p <= '9') {
            if (n->ndig < 19) n->mant = n->mant * 10 + (uint64_t)(*p - '0');
            else n->exp10++;
            n->ndig++;
            p++;
        }
    }
    if (p < e && *p == '.') {
        n->is_int = 0;
        p++;
        if (p >= e || *p < '0' || *p > '9') { s->p = p; DECLINE(s, "bad number"); }
        while (p < e && *p >= '0' && *p <= '9') {
            if (n->ndig == 0 && *p == '0') { n->exp10--; p++; continue; } /* leading zeros of 0.00x */
            if (n->ndig < 19) { n->mant = n->mant * 10 + (uint64_t)(*p - '0'); n->exp10--; }
            n->ndig++;
            p++;
        }
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        n->is_int = 0;
        p++;
        int eneg = 0;
        if (p < e && (*p == '+' || *p == '-')) { eneg = *p == '-'; p++; }
        if (p >= e || *p < '0' || *p > '9') { s->p = p; DECLINE(s, "bad number"); }
        int64_t x = 0;
        while (p < e && *p >= '0' && *p <= '9') {
            if (x < 100000) x = x * 10 + (*p - '0');
            p++;
        }
        n->exp10 += eneg ? -x : x;
    }
    n->len = (size_t)(p - n->tok);
    s->p = p;
    return 0;
}

/* the int64 value of an integer token, or -1 when it does not fit */
static int num_i64(const Num *n, int64_t *out) {
    if (!n->is_int || n->ndig > 19) return -1;
    /* ndig <= 19: mant < 10**19 < 2**64, exp10 == 0 */
    if (n->neg) {
        if (n->mant > (uint64_t)INT64_MAX + 1) return -1;
        *out = n->mant == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)n->mant;
    } else {
        if (n->mant > (uint64_t)INT64_MAX) return -1;
        *out = (int64_t)n->mant;
    }
    return 0;
}

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int num_f64(Scan *s, const Num *n, double *out) {
    int64_t iv;
    if (n->is_int) {
        /* polars reads an integer token as an integer, then converts (so "-0" is +0.0) */
        if (num_i64(n, &iv)) DECLINE(s, "integer beyond 64 bits in a Float64 field");
        *out = (double)iv;
        return 0;
    }
    if (n->ndig > 19) DECLINE(s, "more than 19 significant digits");
    if (n->mant == 0) { *out = n->neg ? -0.0 : 0.0; return 0; }
    /* Clinger's fast path: both the mantissa and the power of ten are exact doubles, so one
     * IEEE multiplication or division is correctly rounded */
    if (n->mant <= (1ULL << 53) && n->exp10 >= -22 && n->exp10 <= 22) {
        double m = (double)n->mant;
        double v = n->exp10 >= 0 ? m * POW10[n->exp10] : m / POW10[-n->exp10];
        *out = n->neg ? -v : v;
        return 0;
    }
    if (n->len >= sizeof s->numbuf) DECLINE(s, "number token too long");
    memcpy(s->numbuf, n->tok, n->len);
    s->numbuf[n->len] = 0;
    errno = 0;
    char *endp;
    double v = strtod_l(s->numbuf, &endp, s->cloc);
    if (endp != s->numbuf + n->len) DECLINE(s, "number strtod did not take whole");
    if (errno == ERANGE || !(v - v == 0)) DECLINE(s, "number out of double range");
    *out = v;
    return 0;
}

/* after an element of an array or object: 1 when a comma follows (another element), 0 when
 * the closing bracket `close` does (consumed), -1 otherwise */
static int next_item(Scan *s, uint8_t close) {
    skip_ws(s);
    if (s->p >= s->end) DECLINE(s, "unexpected end");
    if (*s->p == ',') { s->p++; return 1; }
    if (*s->p == close) { s->p++; return 0; }
    DECLINE(s, close == ']' ? "expected , or ]" : "expected , or }");
}

/* a key and its colon: `key` and `klen` give its raw bytes, `esc` whether it holds an escape */
static int read_key(Scan *s, const uint8_t **key, size_t *klen, int *esc) {
    skip_ws(s);
    if (s->p >= s->end || *s->p != '"') DECLINE(s, "expected a key");
    if (scan_string(s, key, klen, esc, NULL)) return -1;
    skip_ws(s);
    if (s->p >= s->end || *s->p != ':') DECLINE(s, "expected :");
    s->p++;
    return 0;
}

static int skip_value(Scan *s, int depth);

static int expect_lit(Scan *s, const char *lit, size_t n) {
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0) DECLINE(s, "bad literal");
    s->p += n;
    return 0;
}

/* skip (and validate) any JSON value */
static int skip_value(Scan *s, int depth) {
    if (depth > MAX_DEPTH) DECLINE(s, "nesting too deep");
    skip_ws(s);
    if (s->p >= s->end) DECLINE(s, "unexpected end");
    uint8_t c = *s->p;
    const uint8_t *raw;
    size_t rawlen;
    int esc;
    Num num;
    switch (c) {
    case '"':
        return scan_string(s, &raw, &rawlen, &esc, NULL);
    case 't': return expect_lit(s, "true", 4);
    case 'f': return expect_lit(s, "false", 5);
    case 'n': return expect_lit(s, "null", 4);
    case '[':
        s->p++;
        skip_ws(s);
        if (s->p < s->end && *s->p == ']') { s->p++; return 0; }
        for (;;) {
            if (skip_value(s, depth + 1)) return -1;
            int more = next_item(s, ']');
            if (more < 0) return -1;
            if (!more) return 0;
        }
    case '{':
        s->p++;
        skip_ws(s);
        if (s->p < s->end && *s->p == '}') { s->p++; return 0; }
        for (;;) {
            if (read_key(s, &raw, &rawlen, &esc)) return -1;
            if (skip_value(s, depth + 1)) return -1;
            int more = next_item(s, '}');
            if (more < 0) return -1;
            if (!more) return 0;
        }
    default:
        if (c == '-' || (c >= '0' && c <= '9')) {
            if (scan_number(s, &num)) return -1;
            /* polars refuses numbers beyond the double range even where it ignores them; what
             * it does with integers beyond 64 bits or long mantissas is not pinned down here */
            if (num.ndig > 19) DECLINE(s, "more than 19 significant digits");
            if (!num.is_int) {
                double v;
                return num_f64(s, &num, &v);
            }
            return 0;
        }
        DECLINE(s, "unexpected character");
    }
}

static int grow_rows(Field *st, int64_t rows);

/* grow one column to hold `rows` rows */
static int grow_field(Field *f, int64_t rows) {
    size_t r = (size_t)rows;
    if (buf_grow(&f->valid, (r + 7) / 8)) return -1;
    switch (f->kind) {
    case K_STR: return r > SIZE_MAX / 16 || buf_grow(&f->vals, r * 16) ? -1 : 0;
    case K_I64: case K_F64: return r > SIZE_MAX / 8 || buf_grow(&f->vals, r * 8) ? -1 : 0;
    case K_LIST: return r + 1 > SIZE_MAX / 4 || buf_grow(&f->vals, (r + 1) * 4) ? -1 : 0;
    case K_STRUCT: return grow_rows(f, rows);
    }
    return -1;
}

/* grow every live column of a struct (recursively) to hold `rows` rows */
static int grow_rows(Field *st, int64_t rows) {
    for (int i = 0; i < st->nchild; i++)
        if (st->child[i].live && grow_field(&st->child[i], rows)) return -1;
    return 0;
}

static inline void set_bit(Buf *b, int64_t i) { b->p[i >> 3] |= (uint8_t)(1u << (i & 7)); }

/* a string value into a String column at `row` */
static int put_str(Scan *s, Field *f, int64_t row, const uint8_t *txt, size_t n) {
    if (n > INT32_MAX) DECLINE(s, "string too long");
    uint8_t *v = f->vals.p + (size_t)row * 16;
    int32_t len = (int32_t)n;
    memcpy(v, &len, 4);
    if (n <= 12) {
        memcpy(v + 4, txt, n);
    } else {
        if (f->data.len > (size_t)INT32_MAX - n) DECLINE(s, "string data beyond 2 GiB");
        int32_t zero = 0, off = (int32_t)f->data.len;
        memcpy(v + 4, txt, 4);
        memcpy(v + 8, &zero, 4);
        memcpy(v + 12, &off, 4);
        if (buf_put(&f->data, txt, n)) DECLINE(s, "out of memory");
    }
    set_bit(&f->valid, row);
    f->nvalid++;
    return 0;
}

static int read_struct(Scan *s, Field *st, int64_t row, int depth);

/* the value at s->p into field f at `row` */
static int read_field(Scan *s, Field *f, int64_t row, int depth) {
    skip_ws(s);
    if (s->p >= s->end) DECLINE(s, "unexpected end");
    uint8_t c = *s->p;
    if (c == 'n') {  /* null: the slot stays null (a list still gets its empty offset range) */
        if (expect_lit(s, "null", 4)) return -1;
        return 0;
    }
    if (!f->live) {  /* its first value: rows before it are null (zeroed), list offsets 0 */
        if (grow_field(f, s->rowcap)) DECLINE(s, "out of memory");
        f->live = 1;
        if (f->kind == K_LIST) {
            Field *st = f->parent;
            st->live_lists[st->nlive_lists++] = (int8_t)(f - st->child);
        }
    }
    Num num;
    switch (f->kind) {
    case K_STR:
        if (c == '"') {
            const uint8_t *raw;
            size_t n;
            int esc;
            Buf tmp = {0};  /* the decoded text, only written when the string has escapes */
            if (scan_string(s, &raw, &n, &esc, &tmp)) { buf_free(&tmp); return -1; }
            if (!esc) return put_str(s, f, row, raw, n);
            int r = put_str(s, f, row, tmp.p ? tmp.p : (const uint8_t *)"", tmp.len);
            buf_free(&tmp);
            return r;
        }
        if (c == 't') { if (expect_lit(s, "true", 4)) return -1; return put_str(s, f, row, (const uint8_t *)"true", 4); }
        if (c == 'f') { if (expect_lit(s, "false", 5)) return -1; return put_str(s, f, row, (const uint8_t *)"false", 5); }
        if (c == '-' || (c >= '0' && c <= '9')) {
            int64_t iv;
            if (scan_number(s, &num)) return -1;
            if (num_i64(&num, &iv)) DECLINE(s, "a number other than a 64-bit integer in a String field");
            if (iv == 0) return put_str(s, f, row, (const uint8_t *)"0", 1);  /* "-0" */
            return put_str(s, f, row, num.tok, num.len);
        }
        DECLINE(s, "an array or object in a String field");
    case K_I64: case K_F64:
        if (c == '-' || (c >= '0' && c <= '9')) {
            if (scan_number(s, &num)) return -1;
            uint8_t *slot = f->vals.p + (size_t)row * 8;
            if (f->kind == K_I64) {
                int64_t iv;
                if (num_i64(&num, &iv)) DECLINE(s, "a number other than a 64-bit integer in an Int64 field");
                memcpy(slot, &iv, 8);
            } else {
                double d;
                if (num_f64(s, &num, &d)) return -1;
                memcpy(slot, &d, 8);
            }
            set_bit(&f->valid, row);
            f->nvalid++;
            return 0;
        }
        DECLINE(s, "a non-number in a numeric field");
    case K_LIST:
        if (c != '[') DECLINE(s, "a non-array in a List field");
        s->p++;
        skip_ws(s);
        if (s->p < s->end && *s->p == ']') {
            s->p++;
        } else {
            for (;;) {
                skip_ws(s);
                if (s->p >= s->end) DECLINE(s, "unexpected end");
                if (f->nelem >= INT32_MAX) DECLINE(s, "list elements beyond 2**31");
                size_t k = (size_t)f->nelem;
                if (buf_grow(&f->data, (k + 1) * 8) || buf_grow(&f->cvalid, k / 8 + 1)) DECLINE(s, "out of memory");
                if (*s->p == 'n') {
                    if (expect_lit(s, "null", 4)) return -1;
                } else {
                    int64_t iv;
                    if (scan_number(s, &num)) return -1;
                    if (num_i64(&num, &iv)) DECLINE(s, "a list element other than a 64-bit integer");
                    memcpy(f->data.p + k * 8, &iv, 8);
                    set_bit(&f->cvalid, (int64_t)k);
                    f->nelem_valid++;
                }
                f->nelem++;
                int more = next_item(s, ']');
                if (more < 0) return -1;
                if (!more) break;
            }
        }
        set_bit(&f->valid, row);
        f->nvalid++;
        return 0;
    case K_STRUCT:
        if (c != '{') DECLINE(s, "a non-object in a Struct field");
        if (read_struct(s, f, row, depth + 1)) return -1;
        set_bit(&f->valid, row);
        f->nvalid++;
        return 0;
    }
    DECLINE(s, "unknown field kind");
}

/* close a row of a struct: list offsets of every live list below it */
static void end_row(Field *st, int64_t row) {
    for (int j = 0; j < st->nlive_lists; j++) {
        Field *f = &st->child[st->live_lists[j]];
        if (f->kind == K_LIST) {
            int32_t off = (int32_t)f->nelem;
            memcpy(f->vals.p + (size_t)(row + 1) * 4, &off, 4);
        } else if (f->kind == K_STRUCT) {
            end_row(f, row);
        }
    }
}

/* an object at s->p ('{') into the fields of `st` at `row` */
static int read_struct(Scan *s, Field *st, int64_t row, int depth) {
    if (depth > MAX_DEPTH) DECLINE(s, "nesting too deep");
    uint64_t seen = 0;
    int prev = -1;
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == '}') { s->p++; return 0; }
    for (;;) {
        /* Writers emit the keys of like events in the same order: the two keys that followed the
         * previous one lately (events of two kinds alternate) are compared with the text first,
         * before it is scanned as a string and hashed. Key names hold no quote, backslash or
         * control byte (schema names are checked, unknown ones were scanned unescaped), so text
         * equal to one and followed by a quote is that key. */
        skip_ws(s);
        const uint8_t *p = s->p;
        int8_t *guess = st->pred[prev + 1];
        int i = -1;
        for (int g = 0; g < 2 && guess[g] >= 0; g++) {
            size_t n;
            const char *name = key_name(st, guess[g], &n);
            if ((size_t)(s->end - p) > n + 1 && p[0] == '"' && p[n + 1] == '"' && same_bytes(p + 1, name, n)) {
                i = guess[g];
                s->p = p + n + 2;
                skip_ws(s);
                if (s->p >= s->end || *s->p != ':') DECLINE(s, "expected :");
                s->p++;
                break;
            }
        }
        if (i < 0) {
            const uint8_t *key;
            size_t klen;
            int esc;
            if (read_key(s, &key, &klen, &esc)) return -1;
            if (esc) DECLINE(s, "escaped key");
            i = key_index(st, key, klen);
            if (i >= 0) {  /* the newest guess first */
                guess[1] = guess[0];
                guess[0] = (int8_t)i;
            }
        }
        if (i < 0 || i >= st->nchild) {  /* outside the schema: validated and skipped */
            if (i >= 0) prev = i;
            if (skip_value(s, depth + 1)) return -1;
        } else {
            if (seen & (1ULL << i)) DECLINE(s, "repeated key");
            seen |= 1ULL << i;
            prev = i;
            if (read_field(s, &st->child[i], row, depth)) return -1;
        }
        int more = next_item(s, '}');
        if (more < 0) return -1;
        if (!more) return 0;
    }
}

static int scan_all(Scan *s) {
    skip_ws(s);
    if (s->p >= s->end || *s->p != '[') DECLINE(s, "not a JSON array");
    s->p++;
    skip_ws(s);
    int closed = 0;
    if (s->p < s->end && *s->p == ']') { s->p++; closed = 1; }
    while (!closed) {
        skip_ws(s);
        if (s->p >= s->end || *s->p != '{') DECLINE(s, "an array element that is not an object");
        if (s->rows >= s->rowcap) {
            /* first guess from the size (Kineto events are 120-300 bytes): few regrowths, each a copy */
            int64_t guess = (int64_t)((s->end - s->start) / 128);
            int64_t cap = s->rowcap ? s->rowcap * 2 : (guess > 1024 ? (guess < ((int64_t)1 << 24) ? guess : ((int64_t)1 << 24)) : 1024);
            if (cap > ((int64_t)1 << 31) || grow_rows(&s->top, cap)) DECLINE(s, "too many rows");
            s->rowcap = cap;
        }
        if (read_struct(s, &s->top, s->rows, 1)) return -1;
        end_row(&s->top, s->rows);
        s->rows++;
        int more = next_item(s, ']');
        if (more < 0) return -1;
        if (!more) break;
    }
    skip_ws(s);
    if (s->p != s->end) DECLINE(s, "content after the array");
    /* a frame of no rows still needs its buffers (the list offsets' leading 0) */
    if (s->rowcap == 0 && grow_rows(&s->top, 1)) DECLINE(s, "out of memory");
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Python side: buffers handed to pyarrow without a copy, the schema, the entry point */

static PyObject *Unsupported;

typedef struct {
    PyObject_HEAD
    uint8_t *p;
    Py_ssize_t len;
    size_t cap;
    int counted;    /* column memory (in live_bytes), not a zeros() block */
} NativeBuffer;

/* bytes held by live NativeBuffers: what the frames handed out still keep (tests check that a
 * chunk's shaped frames release the chunk's columns). Buffers are made and dropped under the GIL,
 * but polars may drop its last reference from a worker thread through pyarrow: atomics. */
static size_t live_bytes;

static void nb_dealloc(NativeBuffer *self) {
    if (self->counted) __atomic_fetch_sub(&live_bytes, self->cap, __ATOMIC_RELAXED);
    mem_free(self->p, self->cap);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int nb_getbuffer(NativeBuffer *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->p, self->len, 1, flags);
}

static PyBufferProcs nb_as_buffer = {(getbufferproc)nb_getbuffer, NULL};

static PyTypeObject NativeBufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "profaudit.parsers._trace_reader.NativeBuffer",
    .tp_basicsize = sizeof(NativeBuffer),
    .tp_dealloc = (destructor)nb_dealloc,
    .tp_as_buffer = &nb_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory filled by the trace reader, exported through the buffer protocol (read-only).",
};

/* a buffer object owning b's memory (b is emptied), exposing its first `len` bytes */
static PyObject *take(Buf *b, size_t len) {
    if (len > b->cap) { /* cannot happen: every length below was reserved by grow_rows/buf_* */
        PyErr_SetString(PyExc_SystemError, "trace reader: buffer shorter than its column");
        return NULL;
    }
    if (!b->p && buf_grow(b, 1))  /* pyarrow wants a real address even for 0 bytes */
        return PyErr_NoMemory();
    size_t keep = (len + PAGE - 1) / PAGE * PAGE;
    if (keep && b->cap - keep > 65536) {
        /* give back the growth slack: polars keeps the string data of filtered views alive until
         * the tables are built, so slack here is peak memory there (shrinks in place) */
        uint8_t *q = mem_resize(b->p, b->cap, keep);
        if (q) { b->p = q; b->cap = keep; }
    }
    NativeBuffer *o = PyObject_New(NativeBuffer, &NativeBufferType);
    if (!o) return NULL;
    o->p = b->p;
    o->len = (Py_ssize_t)len;
    o->cap = b->cap;
    o->counted = 1;
    __atomic_fetch_add(&live_bytes, b->cap, __ATOMIC_RELAXED);
    b->p = NULL;
    b->len = b->cap = 0;
    return (PyObject *)o;
}

static PyObject *columns(Field *st, int64_t rows) {
    PyObject *out = PyList_New(st->nchild);
    if (!out) return NULL;
    size_t r = (size_t)rows;
    for (int i = 0; i < st->nchild; i++) {
        Field *f = &st->child[i];
        PyObject *item = NULL;
        if (!f->live) {  /* never saw a value: the caller builds an all-null column */
            Py_INCREF(Py_None);
            PyList_SET_ITEM(out, i, Py_None);
            continue;
        }
        PyObject *valid = take(&f->valid, (r + 7) / 8);
        if (!valid) { Py_DECREF(out); return NULL; }
        switch (f->kind) {
        case K_STR: {
            size_t dlen = f->data.len;
            PyObject *v = take(&f->vals, r * 16), *d = v ? take(&f->data, dlen) : NULL;
            if (d) item = Py_BuildValue("(LNNN)", (long long)f->nvalid, valid, v, d);
            else { Py_XDECREF(v); Py_DECREF(valid); }
            break;
        }
        case K_I64: case K_F64: {
            PyObject *v = take(&f->vals, r * 8);
            if (v) item = Py_BuildValue("(LNN)", (long long)f->nvalid, valid, v);
            else Py_DECREF(valid);
            break;
        }
        case K_LIST: {
            size_t k = (size_t)f->nelem;
            PyObject *off = take(&f->vals, (r + 1) * 4);
            PyObject *cv = off ? take(&f->cvalid, (k + 7) / 8) : NULL;
            PyObject *vals = cv ? take(&f->data, k * 8) : NULL;
            if (vals) item = Py_BuildValue("(LNNLLNN)", (long long)f->nvalid, valid, off, (long long)f->nelem,
                                           (long long)f->nelem_valid, cv, vals);
            else { Py_XDECREF(off); Py_XDECREF(cv); Py_DECREF(valid); }
            break;
        }
        case K_STRUCT: {
            PyObject *kids = columns(f, rows);
            if (kids) item = Py_BuildValue("(LNN)", (long long)f->nvalid, valid, kids);
            else Py_DECREF(valid);
            break;
        }
        }
        if (!item) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, i, item);
    }
    return out;
}

/* spec: a sequence of (name: str, kind: int, children: spec or None) */
static int build_fields(Field *st, PyObject *spec, int depth) {
    PyObject *seq = PySequence_Fast(spec, "spec must be a sequence");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > MAX_FIELDS || depth > 2) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "spec: too many fields or too deep");
        return -1;
    }
    st->child = (Field *)calloc((size_t)(n ? n : 1), sizeof(Field));
    st->unk = (UnkKeys *)calloc(1, sizeof(UnkKeys));
    if (!st->child || !st->unk) { Py_DECREF(seq); PyErr_NoMemory(); return -1; }
    st->nchild = (int)n;
    memset(st->slot, -1, sizeof st->slot);
    memset(st->pred, -1, sizeof st->pred);
    for (Py_ssize_t i = 0; i < n; i++) {
        Field *f = &st->child[i];
        const char *name;
        Py_ssize_t nlen;
        int kind;
        PyObject *kids;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "s#iO", &name, &nlen, &kind, &kids)) { Py_DECREF(seq); return -1; }
        int plain = 1;  /* (the key fast path of read_struct relies on it) */
        for (Py_ssize_t j = 0; j < nlen; j++)
            if (name[j] == '"' || name[j] == '\\' || (uint8_t)name[j] < 0x20) plain = 0;
        if (nlen <= 0 || nlen >= MAX_NAME || !plain || kind < K_STR || kind > K_STRUCT || find_key(st, (const uint8_t *)name, (size_t)nlen) >= 0) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "spec: bad field name (empty, too long, a quote, backslash or control byte), kind or a repeated name");
            return -1;
        }
        memcpy(f->name, name, (size_t)nlen);
        f->namelen = (size_t)nlen;
        f->kind = kind;
        f->parent = st;
        if (kind == K_STRUCT) {  /* a struct's own validity is written row by row: live from the start */
            f->live = 1;
            st->live_lists[st->nlive_lists++] = (int8_t)i;
        }
        add_key(st, (int)i);
        if (kind == K_STRUCT && build_fields(f, kids, depth + 1)) { Py_DECREF(seq); return -1; }
    }
    Py_DECREF(seq);
    return 0;
}

static locale_t c_locale;

static PyObject *scan(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer data;
    PyObject *spec;
    if (!PyArg_ParseTuple(args, "y*O", &data, &spec)) return NULL;
    Scan s;
    memset(&s, 0, sizeof s);
    memset(s.top.slot, -1, sizeof s.top.slot);
    s.top.kind = K_STRUCT;
    s.top.live = 1;
    if (build_fields(&s.top, spec, 0)) { field_free(&s.top); PyBuffer_Release(&data); return NULL; }
    s.start = s.p = (const uint8_t *)data.buf;
    s.end = s.p + data.len;
    s.cloc = c_locale;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = scan_all(&s);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    if (rc) {
        PyErr_Format(Unsupported, "%s at byte %zu", s.why, s.where);
        field_free(&s.top);
        return NULL;
    }
    PyObject *cols = columns(&s.top, s.rows);
    field_free(&s.top);
    if (!cols) return NULL;
    return Py_BuildValue("(LN)", (long long)s.rows, cols);
}

static PyObject *py_live_bytes(PyObject *Py_UNUSED(self), PyObject *Py_UNUSED(args)) {
    return PyLong_FromSize_t(__atomic_load_n(&live_bytes, __ATOMIC_RELAXED));
}

/* n zero bytes, read-only for its users: the buffers of columns no row of a chunk has (all null:
 * a validity of zeros, zero values, empty string views), shared by all of them. From mmap, the
 * pages are never written, so they cost neither a memset nor resident memory (reads map the
 * kernel's zero page); pyarrow's nulls() wrote and kept a block per column per chunk. */
static PyObject *py_zeros(PyObject *Py_UNUSED(self), PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "zeros: negative size");
        return NULL;
    }
    Buf b = {0};
    if (buf_grow(&b, (size_t)n ? (size_t)n : 1)) return PyErr_NoMemory();
    NativeBuffer *o = PyObject_New(NativeBuffer, &NativeBufferType);
    if (!o) { buf_free(&b); return NULL; }
    o->p = b.p;
    o->len = n;
    o->cap = b.cap;
    o->counted = 0;
    return (PyObject *)o;
}

static PyMethodDef methods[] = {
    {"zeros", py_zeros, METH_O, "zeros(n) -> NativeBuffer: n zero bytes (untouched pages), for all-null columns."},
    {"live_bytes", py_live_bytes, METH_NOARGS,
     "live_bytes() -> int: bytes of column memory handed out by scan() that are still referenced."},
    {"scan", scan, METH_VARARGS,
     "scan(data, spec) -> (rows, columns): the events of a JSON array read into Arrow buffers, "
     "or Unsupported for input outside the reader's subset."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_trace_reader", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__trace_reader(void) {
    if (PyType_Ready(&NativeBufferType) < 0) return NULL;
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (!c_locale) return PyErr_NoMemory();
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Unsupported = PyErr_NewExceptionWithDoc("profaudit.parsers._trace_reader.Unsupported",
                                            "The input is outside what the native reader reads exactly.", NULL, NULL);
    if (!Unsupported || PyModule_AddObjectRef(m, "Unsupported", Unsupported) < 0) { Py_DECREF(m); return NULL; }
    Py_INCREF(&NativeBufferType);
    if (PyModule_AddObject(m, "NativeBuffer", (PyObject *)&NativeBufferType) < 0) { Py_DECREF(m); return NULL; }
    return m;
}
