/* SPDX-License-Identifier: BSD-3-Clause */
/* Versions: the memcached protocol nodelay implements (what `version` and
 * `stats` report, because clients gate features on it) and nodelay's own. */
#ifndef NODELAY_VERSION_H
#define NODELAY_VERSION_H

#define NODELAY_PROTOCOL_VERSION "1.6.45"
#define NODELAY_VERSION "0.1.0"

#endif
