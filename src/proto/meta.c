/* Meta command dispatch: mg ms md ma mn me. */
#include "proto/meta.h"

#include <string.h>

#include "net/reply.h"
#include "proto/session.h"
#include "proto/text.h"
#include "stats/stats.h"

bool meta_is_command(const struct text_line *line)
{
    if (line->ntok == 0 || line->tok[0].len != 2 || line->tok[0].s[0] != 'm')
        return false;
    switch (line->tok[0].s[1]) {
    case 'g': case 's': case 'd': case 'a': case 'n': case 'e':
        return true;
    default:
        return false;
    }
}

void meta_command(struct session *s, const struct text_line *line)
{
    STAT_INC(s->stats, cmd_meta);
    if (line->tok[0].s[1] == 'n') {
        reply_str(&s->reply, "MN\r\n");
        return;
    }
    reply_str(&s->reply, "SERVER_ERROR not implemented yet\r\n");
}

void meta_state_release(struct session *s)
{
    (void)s;
}
