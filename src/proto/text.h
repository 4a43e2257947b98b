/* The text protocol (classic and meta commands share its line framing). */
#ifndef NODELAY_PROTO_TEXT_H
#define NODELAY_PROTO_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "store/store.h"

/* State kept between reads: a value being received or swallowed. */
struct text_state {
    bool receiving;                /* a value is arriving into `res` */
    struct store_reservation res;
    size_t filled;                 /* value bytes received so far */
    size_t swallow;                /* bytes to discard (a refused value and its \r\n) */
};

struct session;
enum proto_status;

enum proto_status text_process(struct session *s, const char *buf, size_t len,
                               size_t *consumed);
void text_state_release(struct session *s);

#endif
