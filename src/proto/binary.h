/* memcached's binary protocol (and SASL, which exists only there). */
#ifndef NODELAY_PROTO_BINARY_H
#define NODELAY_PROTO_BINARY_H

#include <stdbool.h>
#include <stddef.h>

#include "store/store.h"

/* State kept between reads. */
struct bin_state {
    bool receiving;
    struct store_reservation res;
    size_t filled;
    size_t swallow;
};

struct session;
enum proto_status;

enum proto_status bin_process(struct session *s, const char *buf, size_t len,
                              size_t *consumed);
void bin_state_release(struct session *s);

#endif
