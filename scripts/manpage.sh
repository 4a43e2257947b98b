#!/bin/sh
# Prints nodelay(1) for `make install` and the Debian package: the server's
# own `--man` (generated from its settings table, issue 8.1). Until a server
# has --man, a page is made from `-h`, its documentation of every flag.
#   scripts/manpage.sh BINARY > nodelay.1
set -eu
bin=$1
if page=$("$bin" --man 2>/dev/null) && [ "${page#.TH}" != "$page" ]; then
    printf '%s\n' "$page"
    exit 0
fi
version=$("$bin" -V 2>&1 | head -1)
cat <<ROFF
.TH NODELAY 1 "" "$version" "User Commands"
.SH NAME
nodelay \\- a memcached-compatible cache server
.SH SYNOPSIS
.B nodelay
.RI [ options ]
.SH DESCRIPTION
nodelay speaks memcached 1.6's text, meta and binary protocols and takes
memcached's command line. Its options, as
.B nodelay \\-h
prints them:
.PP
.nf
ROFF
# groff: a backslash is \e, and a line may not start with . or '
"$bin" -h 2>&1 | sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
cat <<'ROFF'
.fi
.SH FILES
.TP
.I /etc/nodelay.conf
flags, one per line, in memcached.conf's format (read with \-\-config)
.SH SEE ALSO
.BR memcached (1)
ROFF
