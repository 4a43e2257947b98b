/* SPDX-License-Identifier: BSD-3-Clause */
/* memcached's extstore options (-o ext_*): read and checked as memcached
 * 1.6.45 reads and checks them, message for message and exit code for exit
 * code, so a command line memcached refuses is refused here. Two places
 * differ, where memcached dies of SIGFPE (a page size of 0 bytes in its 32
 * bits: ext_page_size=0 or a multiple of 4096): nodelay refuses with a
 * message (docs/compat-differences.md). The values go to the store's flash
 * tier (options.c); the run-time ones reach it through
 * settings_flash_tuning. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/flash_tuning.h"
#include "base/num.h"
#include "settings/settings_internal.h"

/* memcached's page and write buffer sizes are MB held in 32 bits of bytes. */
static uint32_t ext_mb32(size_t mb)
{
    return (uint32_t)((uint64_t)mb << 20);
}

int settings_parse_EXT_U(struct settings_parse_ctx *c, const struct settings_row *r,
                         const char *name, const char *val)
{
    uint64_t v;
    if (!val)
        SETTINGS_FAIL(c, 1, "Missing %s argument\n", name);
    if (!num_safe_u64(val, strlen(val), &v))
        SETTINGS_FAIL(c, 1, "could not parse argument to %s\n", name);
    settings_row_set_long(c->s, r, (long)v);
    return 0;
}

int settings_parse_EXT_DBL(struct settings_parse_ctx *c, const struct settings_row *r,
                           const char *name, const char *val)
{
    if (!val)
        SETTINGS_FAIL(c, 1, "Missing %s argument\n", name);
    /* strtod with its range error refused (1e999, 1e-400), as memcached */
    char *end;
    errno = 0;
    double d = strtod(val, &end);
    if (errno == ERANGE || end == val || (*end && !isspace((unsigned char)*end)))
        SETTINGS_FAIL(c, 1, "could not parse argument to %s\n", name);
    settings_row_set_double(c->s, r, d);
    return 0;
}

/* The next ':'-separated piece of *p that is not empty (strtok's rule, so
 * "a::64m" is "a" and "64m"), NUL-terminated in buf; NULL at the end. */
static const char *ext_token(const char **p, char *buf, size_t n)
{
    const char *s = *p;
    while (*s == ':')
        s++;
    if (!*s)
        return NULL;
    size_t len = strcspn(s, ":");
    *p = s + len;
    if (len >= n)
        len = n - 1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return buf;
}

/* The page buckets 1.6.45 lets an ext_path be given to. */
static bool ext_bucket_known(const char *b)
{
    static const char *const known[] = {"compact", "lowttl", "chunked", "default", "coldcompact",
                                        "old"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(b, known[i]) == 0)
            return true;
    return false;
}

/* One ext_path value: "file:size[:bucket]". 0, or the message memcached
 * prints (two lines), to `why`. */
static int ext_path_parse(const char *val, struct settings_ext_file *f, char *why, size_t n)
{
    static const char fail[] = "failed to parse ext_path argument\n";
    const char *p = val;
    char sz[64], bucket[64];
    if (!ext_token(&p, f->path, sizeof f->path)) {
        snprintf(why, n, "%s", fail);
        return -1;
    }
    if (!ext_token(&p, sz, sizeof sz)) {
        snprintf(why, n, "must supply size to ext_path, ie: ext_path=/f/e:64m (M|G|T|P supported)\n%s",
                 fail);
        return -1;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(sz, &end, 10);
    int shift = 0;
    switch (end[0]) {
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    case 'p': case 'P': shift = 50; break;
    }
    if (!shift || end[1]) {
        snprintf(why, n, "must supply size to ext_path, ie: ext_path=/f/e:64m (m|g|t|p supported)\n%s",
                 fail);
        return -1;
    }
    f->size = (uint64_t)v << shift; /* wraps as memcached's does ("-64m") */
    if (ext_token(&p, bucket, sizeof bucket) && !ext_bucket_known(bucket)) {
        snprintf(why, n, "Unknown extstore bucket: %s\n%s", bucket, fail);
        return -1;
    }
    return 0;
}

/* Each ext_path given is kept, joined by '\n' (a value cannot hold one:
 * -o splits at ',' and a config line ends there). */
int settings_parse_EXT_PATH(struct settings_parse_ctx *c, const struct settings_row *r,
                            const char *name, const char *val)
{
    (void)name;
    if (!val)
        SETTINGS_FAIL(c, 1, "missing argument to ext_path, ie: ext_path=/d/file:5G\n");
    struct settings_ext_file f;
    char why[512];
    if (ext_path_parse(val, &f, why, sizeof why) < 0)
        SETTINGS_FAIL(c, 1, "%s", why);
    const char *old = settings_row_str(c->s, r);
    int files = 1;
    for (const char *q = old; q && *q; q++)
        files += *q == '\n';
    if (old && files >= SETTINGS_EXT_FILES_MAX)
        SETTINGS_FAIL(c, 1, "nodelay: at most %d ext_path files\n", SETTINGS_EXT_FILES_MAX);
    size_t n = (old ? strlen(old) + 1 : 0) + strlen(val) + 1;
    char *joined = malloc(n);
    if (!joined)
        SETTINGS_FAIL(c, 1, "out of memory\n");
    snprintf(joined, n, "%s%s%s", old ? old : "", old ? "\n" : "", val);
    char *kept = settings_keep(c->s, joined);
    free(joined);
    if (!kept)
        SETTINGS_FAIL(c, 1, "out of memory\n");
    settings_row_set_str(c->s, r, kept);
    return 0;
}

int settings_ext_files(const struct settings *s, struct settings_ext_file *out, int max)
{
    int n = 0;
    for (const char *p = s->ext_path; p && *p && n < max;) {
        size_t len = strcspn(p, "\n");
        char one[sizeof out->path + 64];
        snprintf(one, sizeof one, "%.*s", (int)len, p);
        char why[512];
        if (ext_path_parse(one, &out[n], why, sizeof why) == 0)
            n++;
        p += len + (p[len] == '\n');
    }
    return n;
}

/* memcached's checks once every flag is known, in its order, and only with
 * an ext_path (without one it reads the other ext_* and ignores them). */
int settings_ext_check(struct settings_parse_ctx *c)
{
    const struct settings *s = c->s;
    if (!s->ext_path)
        return 0;
    uint32_t page = ext_mb32(s->ext_page_size), wbuf = ext_mb32(s->ext_wbuf_size);
    if (s->item_size_max > wbuf)
        SETTINGS_FAIL(c, SETTINGS_EX_USAGE,
                      "-I (item_size_max: %zu) cannot be larger than ext_wbuf_size: %u\n",
                      s->item_size_max, wbuf);
    /* memcached refuses the pair: a datagram's request is answered whole
     * in one pass, and a flash read would leave it waiting. */
    if (s->udpport != 0)
        SETTINGS_FAIL(c, SETTINGS_EX_USAGE,
                      "Cannot use UDP with extstore enabled (-U 0 to disable)\n");
    if (page == 0)
        SETTINGS_FAIL(c, SETTINGS_EX_USAGE,
                      "ext_page_size (%zu MB) is 0 bytes in memcached's 32 bits, cannot use\n",
                      s->ext_page_size);
    struct settings_ext_file files[SETTINGS_EXT_FILES_MAX];
    int n = settings_ext_files(s, files, SETTINGS_EXT_FILES_MAX);
    uint64_t pages = 0;
    for (int i = 0; i < n; i++) {
        uint64_t p = files[i].size / page;
        if (p == 0)
            SETTINGS_FAIL(c, SETTINGS_EX_USAGE, "supplied ext_path has zero size, cannot use\n");
        pages = pages + p < pages ? UINT64_MAX : pages + p;
    }
    if (page % wbuf != 0)
        SETTINGS_FAIL(c, 1, "Failed to initialize external storage: "
                            "page_size must be divisible by wbuf_size\n");
    if (page % (2u << 20) || wbuf % (2u << 20))
        SETTINGS_FAIL(c, 1, "Failed to initialize external storage: "
                            "page_size and wbuf_size must be divisible by 1024*1024*2\n");
    if (pages >= 65536)
        SETTINGS_FAIL(c, 1, "Failed to initialize external storage: page_count must total to "
                            "< 65536. Increase page_size or lower path sizes\n");
    /* memcached's default for both thresholds, set when ext_compact_under
     * is 0 (an ext_drop_under given alone is overwritten): a hundredth of
     * the pages of the file named last, at least one. */
    if (n > 0 && SETTINGS_GET(s, ext_compact_under) == 0) {
        uint64_t under = files[n - 1].size / page / 100;
        under = under ? under : 1;
        SETTINGS_SET(s, ext_compact_under, (size_t)under);
        SETTINGS_SET(s, ext_drop_under, (size_t)under);
    }
    return 0;
}

void settings_flash_tuning(const void *run, struct flash_tuning *out)
{
    const struct settings_runtime *r = run;
    *out = (struct flash_tuning){
        .item_size = (uint32_t)SETTINGS_RUN_GET(r, ext_item_size),
        .item_age = (uint32_t)SETTINGS_RUN_GET(r, ext_item_age),
        .low_ttl = (uint32_t)SETTINGS_RUN_GET(r, ext_low_ttl),
        .recache_rate = (uint32_t)SETTINGS_RUN_GET(r, ext_recache_rate),
        .compact_under = (uint32_t)SETTINGS_RUN_GET(r, ext_compact_under),
        .drop_under = (uint32_t)SETTINGS_RUN_GET(r, ext_drop_under),
        .max_sleep = (uint32_t)SETTINGS_RUN_GET(r, ext_max_sleep),
        .max_frag = SETTINGS_RUN_GET(r, ext_max_frag),
        .drop_unread = SETTINGS_RUN_GET(r, ext_drop_unread),
    };
}
