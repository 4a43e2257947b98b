/* SPDX-License-Identifier: BSD-3-Clause */
/* The text protocol: the framing of a read into lines, the classic
 * commands, and the hand-off of meta commands to proto/meta/. The line
 * tokenizer and the value receiver both use are in proto/line/. */
#ifndef NODELAY_PROTO_TEXT_H
#define NODELAY_PROTO_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/line/line.h"
#include "proto/text/text_state.h"

struct session;
struct store_prefetch_run;
enum proto_status;

enum proto_status text_process(struct session *s, const char *buf, size_t len,
                               size_t *consumed);
/* proto_read_hint's text half: the first request line's key, if it is a
 * lookup or a storage command (as text_process's own batch picks keys). */
void text_read_hint(struct session *s, const char *buf, size_t len,
                    struct store_prefetch_run *run);
/* The connection read n bytes straight into s->sink (proto_sink_filled). */
void text_sink_filled(struct session *s, size_t n);
/* Now and then while idle: free a value being received that was cut off
 * to make room for others (store_upload_alive). */
void text_tick(struct session *s);
/* Abort a value being received (its reservation included: meta_state_release
 * must not abort text_of(s)->value.res again), release meta's and auth's state. */
void text_state_release(struct session *s);

/* -Y ascii authentication: load (or, on SIGHUP, reload) the file of
 * "user:pass" lines. Safe to call while workers run; not from a signal
 * handler. Returns 0, or -1 (errno set) when the file cannot be read, in
 * which case the previous list stays in force. */
int text_auth_load(const char *path);
/* Free the loaded list (at exit). */
void text_auth_unload(void);

#endif
