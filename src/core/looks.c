/*
 * looks.c — looks at nodes no request owns (looks.h).
 */
#include "looks.h"

#include <stdio.h>
#include <string.h>

#include "core.h"
#include "zk_result.h"

ZlkLook *
zc_looks_find(const ZlkLooks *ls, const char *path, const char *uuid)
{
	int			i;

	for (i = 0; i < ls->n; i++)
		if (strcmp(ls->l[i]->path, path) == 0 && strcmp(ls->l[i]->uuid, uuid) == 0)
			return ls->l[i];
	return NULL;
}

ZlkLook *
zc_looks_new(ZlkLooks *ls, const char *path, const char *uuid, int64_t session)
{
	ZlkLook    *l;

	if (zc_looks_find(ls, path, uuid) != NULL || ls->n >= ZLK_MAX)
		return NULL;
	l = ls->host->alloc(ls->host->arg, sizeof(ZlkLook));
	l->stray = uuid[0] == '\0';
	l->session = session;
	snprintf(l->path, sizeof(l->path), "%s", path);
	snprintf(l->uuid, sizeof(l->uuid), "%s", uuid);
	ls->l[ls->n++] = l;
	return l;
}

void
zc_looks_again(ZlkLook *l, int64_t now)
{
	l->in_flight = false;
	l->due = now + ZLK_DELAY_US;
}

void
zc_looks_send(ZlkLooks *ls, ZlkLook *l, int64_t now)
{
	l->in_flight = true;
	if (!ls->host->send(ls->host->arg, l))
		zc_looks_again(l, now);
}

static void
end_look(ZlkLooks *ls, int i)
{
	ls->host->release(ls->host->arg, ls->l[i]);
	ls->l[i] = ls->l[--ls->n];
}

/* Whether an answer settles it: done, or gone with the session. */
static bool
settled(int rc)
{
	return rc == ZOK || rc == ZNONODE || rc == ZSESSIONEXPIRED || rc == ZCLOSING ||
		rc == ZINVALIDSTATE;
}

ZlkAnswer
zc_looks_answered(ZlkLooks *ls, ZlkLook *l, int rc, int64_t now)
{
	int			i;

	if (settled(rc))
	{
		for (i = 0; i < ls->n; i++)
			if (ls->l[i] == l)
				end_look(ls, i);
		return ZLK_DONE;
	}
	zc_looks_again(l, now);
	/* a refusal is worth a word, once per node; a lost reply is not */
	if (l->said || zc_core_outcome_unknown(rc))
		return ZLK_AGAIN;
	l->said = true;
	return ZLK_AGAIN_SAY;
}

int64_t
zc_looks_tend(ZlkLooks *ls, int64_t now, int64_t session)
{
	int64_t		next = -1;
	int			i;

	for (i = 0; i < ls->n; i++)
	{
		ZlkLook    *l = ls->l[i];

		if (l->in_flight)
			continue;
		if (l->session != session)
		{
			end_look(ls, i--);	/* its nodes went with its session */
			continue;
		}
		if (l->due <= now)
			zc_looks_send(ls, l, now);
		if (!l->in_flight)		/* not due yet, or could not be sent: again then */
			next = (next < 0 || l->due - now < next) ? l->due - now : next;
	}
	return next;
}
