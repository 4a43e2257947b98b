/* SPDX-License-Identifier: BSD-3-Clause */
/* Binary protocol: SASL_LIST_MECHS, SASL_AUTH and SASL_STEP (-S).
 *
 * Every AUTH or STEP (and LIST_MECHS, which restarts an exchange in
 * memcached) first drops the connection's authentication, so a failed attempt
 * after a successful one never leaves it authenticated (memcached's
 * CVE-2013-7239). PLAIN sends everything at once; an AUTH without data gets
 * AUTH_CONTINUE and the credentials then come in a STEP, as Cyrus answers.
 *
 * At -v each AUTH and STEP logs what memcached (linked with Cyrus SASL, with
 * its MEMCACHED_SASL_PWDB password file) prints: the mechanism and data
 * length, Cyrus's message for a refusal ("SASL (severity 2): ..."), and
 * Cyrus's result code (bin_sasl_run). */
#include "proto/binary/binary.h"

#include "clock.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

#include "reply/reply.h"
#include "proto/proto.h"
#include "proto/sasl.h"
#include "proto/session.h"
#include "stats/stats.h"

static void bin_sasl_reset(struct session *s)
{
    bin_of(s)->sasl_authed = false;
    s->authenticated = false;
}

/* Without -S the SASL opcodes are unknown, and their data is discarded. */
static enum proto_status bin_sasl_disabled(struct session *s, const struct bin_header *h)
{
    int rc = bin_reply_error(s, h->opcode, h->opaque, BIN_STATUS_UNKNOWN_COMMAND);
    bin_swallow(s, (size_t)h->bodylen - h->keylen - h->extlen);
    return rc == 0 ? PROTO_OK : PROTO_CLOSE;
}

enum proto_status bin_sasl_list(struct session *s, const struct bin_header *h)
{
    if (!s->opt->sasl)
        return bin_sasl_disabled(s, h);
    bin_sasl_reset(s);
    bin_of(s)->sasl_started = false;
    struct bin_resp r = {.opcode = h->opcode, .status = BIN_STATUS_OK, .opaque = h->opaque};
    int rc = bin_reply(s, &r, NULL, 0, NULL, 0, SASL_MECHS, strlen(SASL_MECHS));
    return rc == 0 ? PROTO_OK : PROTO_CLOSE;
}

enum proto_status bin_sasl_start(struct session *s, const struct bin_header *h,
                                 const char *key)
{
    struct bin_state *st = bin_of(s);
    if (!s->opt->sasl)
        return bin_sasl_disabled(s, h);
    size_t vlen = bin_value_len(h);
    if (h->keylen > BIN_SASL_MECH_MAX) {
        int rc = bin_reply_error(s, h->opcode, h->opaque, BIN_STATUS_EINVAL);
        bin_swallow(s, vlen);
        return rc == 0 ? PROTO_OK : PROTO_CLOSE;
    }
    /* memcached holds the data in an item: more than -I cannot be. */
    if (vlen + h->keylen > s->opt->item_size_max) {
        int rc = bin_reply_error(s, h->opcode, h->opaque, BIN_STATUS_ENOMEM);
        bin_swallow(s, vlen);
        return rc == 0 ? PROTO_OK : PROTO_CLOSE;
    }
    if (!st->sasl_data) {
        st->sasl_data = malloc(BIN_SASL_DATA_MAX);
        if (!st->sasl_data)
            return PROTO_CLOSE;
    }
    st->hdr = *h;
    memcpy(st->sasl_mech, key, h->keylen);
    st->sasl_nmech = (uint8_t)h->keylen;
    st->sasl_overflow = vlen > BIN_SASL_DATA_MAX;
    st->recv = BIN_RECV_SASL;
    st->need = vlen;
    st->filled = 0;
    return PROTO_OK;
}

enum bin_sasl_result { BIN_SASL_OK, BIN_SASL_CONTINUE, BIN_SASL_FAIL };

/* Cyrus SASL's result codes (sasl.h) that memcached prints as "sasl result
 * code:  N" for the outcomes nodelay has. */
enum {
    CYRUS_SASL_CONTINUE = 1,
    CYRUS_SASL_OK = 0,
    CYRUS_SASL_FAIL = -1,
    CYRUS_SASL_NOMECH = -4,
    CYRUS_SASL_BADPROT = -5,
    CYRUS_SASL_BADAUTH = -13,
    CYRUS_SASL_NOUSER = -20,
};

/* What Cyrus logs through memcached's callback for a failed check (severity
 * 2, SASL_LOG_FAIL, printed from -v). */
#define bin_sasl_log_cyrus(...) log_info("SASL (severity 2): " __VA_ARGS__)

/* Count a failed attempt; true when the connection must be closed. */
static bool bin_sasl_guard_failed(struct session *s)
{
    int limit = s->opt->auth_fail_limit;
    rel_time_t now = clock_now();
    return auth_guard_failed(&s->auth, limit, now) || !auth_guard_admit(&s->auth, limit, now);
}

/* A PLAIN message's result code, logging as memcached with Cyrus does. */
static int bin_sasl_plain(const char *msg, size_t n, bool overflow)
{
    if (overflow) {
        /* longer than BIN_SASL_DATA_MAX, more than any password file entry
         * can be: not kept, so nothing to name */
        bin_sasl_log_cyrus("Password verification failed");
        return CYRUS_SASL_NOUSER;
    }
    const char *user;
    size_t nuser;
    enum sasl_plain_verdict v = sasl_plain_verify(msg, n, &user, &nuser);
    int k = (int)nuser;
    switch (v) {
    case SASL_PLAIN_OK:
        return CYRUS_SASL_OK;
    case SASL_PLAIN_NO_AUTHCID:
        bin_sasl_log_cyrus("Can only find author (no password)");
        return CYRUS_SASL_BADPROT;
    case SASL_PLAIN_NO_PASSWORD:
        bin_sasl_log_cyrus("Can only find author/en (no password)");
        return CYRUS_SASL_BADPROT;
    case SASL_PLAIN_TRAILING:
        /* Cyrus's message ends in a newline of its own */
        bin_sasl_log_cyrus("Got more data than we were expecting in the PLAIN plugin\n");
        return CYRUS_SASL_BADPROT;
    case SASL_PLAIN_TOO_LONG:
        log_info("WARNING: Failed to authenticate <%.*s> due to too long password (%d)", k, user,
                 (int)(n - (size_t)(user - msg) - nuser - 1));
        bin_sasl_log_cyrus("Password verification failed");
        return CYRUS_SASL_NOUSER;
    case SASL_PLAIN_BAD_PASSWORD:
        log_info("INFO: User <%.*s> failed to authenticate", k, user);
        bin_sasl_log_cyrus("Password verification failed");
        return CYRUS_SASL_NOUSER;
    case SASL_PLAIN_NOT_AUTHZID:
        return CYRUS_SASL_BADAUTH; /* Cyrus does not log this one */
    }
    return CYRUS_SASL_FAIL;
}

/* Cyrus's result code for the exchange in st, logging as memcached does. */
static int bin_sasl_run(struct session *s, struct bin_state *st)
{
    const struct bin_header *h = &st->hdr;
    size_t n = st->need;
    log_info("mech:  ``%.*s'' with %zu bytes of data", (int)st->sasl_nmech, st->sasl_mech, n);
    if (h->opcode == BIN_OP_SASL_AUTH) {
        if (!sasl_mech_supported(st->sasl_mech, st->sasl_nmech)) {
            bin_sasl_log_cyrus("Couldn't find mech %.*s", (int)st->sasl_nmech, st->sasl_mech);
            return CYRUS_SASL_NOMECH;
        }
        if (n == 0)
            return CYRUS_SASL_CONTINUE;
    } else if (!st->sasl_started) {
        log_info("%d: SASL_STEP called but sasl_server_start not called for this connection!",
                 s->cfd);
        return CYRUS_SASL_FAIL;
    }
    return bin_sasl_plain(st->sasl_data, n, st->sasl_overflow);
}

void bin_sasl_complete(struct session *s)
{
    struct bin_state *st = bin_of(s);
    const struct bin_header *h = &st->hdr;
    bin_sasl_reset(s);
    int code = bin_sasl_run(s, st);
    /* an address over its guessing limit is refused without a check */
    if (code == CYRUS_SASL_OK && !auth_guard_admit(&s->auth, s->opt->auth_fail_limit, clock_now()))
        code = CYRUS_SASL_FAIL;
    enum bin_sasl_result res = code == CYRUS_SASL_OK         ? BIN_SASL_OK
                               : code == CYRUS_SASL_CONTINUE ? BIN_SASL_CONTINUE
                                                             : BIN_SASL_FAIL;
    log_info("sasl result code:  %d", code);
    if (res == BIN_SASL_FAIL)
        log_info("Unknown sasl response:  %d", code);
    st->sasl_started = res == BIN_SASL_CONTINUE;
    struct bin_resp r = {.opcode = h->opcode, .opaque = h->opaque};
    int rc = 0;

    switch (res) {
    case BIN_SASL_OK:
        st->sasl_authed = true;
        s->authenticated = true;
        STAT_INC(s->stats, auth_cmds);
        r.status = BIN_STATUS_OK;
        rc = bin_reply(s, &r, NULL, 0, NULL, 0, "Authenticated", 13);
        break;
    case BIN_SASL_CONTINUE:
        r.status = BIN_STATUS_AUTH_CONTINUE;
        rc = bin_reply(s, &r, NULL, 0, NULL, 0, NULL, 0);
        break;
    case BIN_SASL_FAIL:
        STAT_INC(s->stats, auth_cmds);
        STAT_INC(s->stats, auth_errors);
        rc = bin_reply_error(s, h->opcode, h->opaque, BIN_STATUS_AUTH_ERROR);
        if (bin_sasl_guard_failed(s))
            st->failed = true; /* closed after the reply (auth_guard.h) */
        break;
    }
    if (rc != 0)
        st->failed = true;
    /* The credentials are not kept beyond the check. */
    memset(st->sasl_data, 0, BIN_SASL_DATA_MAX);
}
